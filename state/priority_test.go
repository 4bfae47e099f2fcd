package state

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSlotsGoByPriorityThenArrival fills the one slot with a blocked task,
// queues tasks of mixed priorities, then frees the slot: they must start
// highest priority first, equal priorities in submission order.
func TestSlotsGoByPriorityThenArrival(t *testing.T) {
	tests := []struct {
		name       string
		buffer     int   // 1: the tasks wait for a Buffer place; more: for the slot
		priorities []int // of tasks "0", "1", ... in submission order
		want       []string
	}{
		{"all equal keep arrival order", 8, []int{0, 0, 0, 0}, []string{"0", "1", "2", "3"}},
		{"higher first", 8, []int{1, 5, 3}, []string{"1", "2", "0"}},
		{"stable among equals", 8, []int{2, 7, 2, 7, -1}, []string{"1", "3", "0", "2", "4"}},
		{"waiting for a buffer place", 1, []int{2, 7, 2, 7, -1}, []string{"1", "3", "0", "2", "4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPool(t, Config{Parallelism: 1, Buffer: tc.buffer, Hold: 8})
			gate := make(chan struct{})
			blocker, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "blocker"}}, 0, Job{Work: func(context.Context, int) ([]any, error) {
				<-gate
				return nil, nil
			}})
			waitStatus(t, blocker, Running)
			var mu sync.Mutex
			var order []string
			var tasks []*Task
			for i, prio := range tc.priorities {
				id := fmt.Sprint(i)
				task, adm, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: id}}, 0, Job{Priority: prio, Work: func(context.Context, int) ([]any, error) {
					mu.Lock()
					order = append(order, id)
					mu.Unlock()
					return nil, nil
				}})
				if adm != Started {
					t.Fatalf("Submit %s = %v, want Started", id, adm)
				}
				tasks = append(tasks, task)
			}
			close(gate)
			for _, task := range tasks {
				wait(t, task)
			}
			if !reflect.DeepEqual(order, tc.want) {
				t.Errorf("start order = %v, want %v", order, tc.want)
			}
		})
	}
}

// TestCancelledClaimPassesTheSlotOn removes a task while it waits for a slot:
// the slot must go to the next waiter, not be lost.
func TestCancelledClaimPassesTheSlotOn(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 3})
	gate := make(chan struct{})
	blocker, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "blocker"}}, 0, Job{Work: func(context.Context, int) ([]any, error) {
		<-gate
		return nil, nil
	}})
	waitStatus(t, blocker, Running)
	ran := func(context.Context, int) ([]any, error) { return []any{"ran"}, nil }
	dropped, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "dropped"}}, 0, Job{Priority: 9, Work: ran})
	next, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "next"}}, 0, Job{Work: ran})
	p.Remove(dropped)
	wait(t, dropped)
	if _, err := dropped.Result(); !errors.Is(err, context.Canceled) {
		t.Errorf("removed waiting task's error = %v, want context.Canceled", err)
	}
	close(gate)
	wait(t, next)
	if outs, err := next.Result(); err != nil || len(outs) != 1 {
		t.Errorf("next task = %v, %v; want [ran], nil", outs, err)
	}
}

func waitStatus(t *testing.T, task *Task, want Status) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for task.Status() != want {
		if time.Now().After(deadline) {
			t.Fatalf("task %v is %v, want %v", task.Key, task.Status(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

type closeCounter struct{ closed int }

func (c *closeCounter) Close() error {
	c.closed++
	return nil
}

func TestSharedValueIsSharedAndClosedByReset(t *testing.T) {
	r := NewRegistry()
	made := 0
	create := func() (any, error) {
		made++
		return &closeCounter{}, nil
	}
	a, err := r.SharedValue("t", create)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.SharedValue("t", create)
	if a != b || made != 1 {
		t.Errorf("two SharedValue calls made %d values (same: %v), want 1 shared", made, a == b)
	}
	if _, err := r.SharedValue("bad", func() (any, error) { return nil, errors.New("no") }); err == nil {
		t.Error("SharedValue with a failing create returned no error")
	}
	if err := r.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := a.(*closeCounter).closed; got != 1 {
		t.Errorf("Close calls after Reset = %d, want 1", got)
	}
	if c, _ := r.SharedValue("t", create); c == a {
		t.Error("SharedValue after Reset returned the old value")
	}
}

// TestHoldAndBuffer: with Buffer 1 and Hold 3, a finished task keeps its
// Hold place until removed but not its Buffer place; an admitted task waits
// in the pool for a Buffer place; past Hold, Submit reports NoRoom.
func TestHoldAndBuffer(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Hold: 3})
	var ran atomic.Int32
	quick := Job{Work: func(context.Context, int) ([]any, error) { ran.Add(1); return nil, nil }}
	gate := make(chan struct{})
	slow := Job{Work: func(context.Context, int) ([]any, error) { <-gate; return nil, nil }}

	a, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "a"}}, 0, quick)
	wait(t, a)
	b, adm, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "b"}}, 0, slow)
	if adm != Started {
		t.Fatalf("Submit after a finished task = %v, want Started", adm)
	}
	waitStatus(t, b, Running)
	c, adm, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "c"}}, 0, quick)
	if adm != Started {
		t.Fatalf("Submit while b runs = %v, want Started (admitted, waiting for the Buffer place)", adm)
	}
	if got := p.InFlight(); got != 1 {
		t.Errorf("InFlight = %d, want 1 (Buffer)", got)
	}
	if _, adm, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "d"}}, 0, quick); adm != NoRoom {
		t.Errorf("Submit with a, b, c held = %v, want NoRoom: Hold is 3", adm)
	}
	if c.Status() != Waiting || ran.Load() != 1 {
		t.Errorf("c is %v after %d quick runs; want waiting, 1 run (a's)", c.Status(), ran.Load())
	}
	close(gate)
	wait(t, c)
	p.Remove(a)
	if _, adm, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "d"}}, 0, quick); adm != Started {
		t.Errorf("Submit after Remove = %v, want Started", adm)
	}
	if got := p.Held(); got != 3 {
		t.Errorf("Buffered = %d, want 3 (b, c, d)", got)
	}
}

func TestHoldBelowBufferIsRejected(t *testing.T) {
	if _, err := newPool(Config{Parallelism: 1, Buffer: 4, Hold: 2}); err == nil || !strings.Contains(err.Error(), "hold 2 must be >= the buffer 4") {
		t.Errorf("newPool with Hold < Buffer = %v, want an error naming both", err)
	}
}

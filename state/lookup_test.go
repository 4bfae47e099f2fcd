package state

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLookupHitMakesNoCallAndPassesNoGate: a hit finishes the task with its
// outputs; the gate and the call never see it.
func TestLookupHitMakesNoCallAndPassesNoGate(t *testing.T) {
	g := &fakeGate{}
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Gate: func() Gate { return g }})
	task, _, err := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: "1"}}, 0, Job{
		Work:   func(context.Context, int) ([]any, error) { t.Error("a hit called"); return nil, nil },
		Lookup: func(context.Context) Lookup { return Lookup{Hit: true, Outputs: []any{"cached"}} },
	})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, task)
	if out, err := task.Result(); err != nil || len(out) != 1 || out[0] != "cached" {
		t.Errorf("Result = %v, %v; want [cached]", out, err)
	}
	if n := g.enterings.Load(); n != 0 || task.Attempts() != 0 {
		t.Errorf("gate asked %d times, attempts %d; want 0 and 0", n, task.Attempts())
	}
	if p.InFlight() != 0 {
		t.Errorf("places in flight after the hit = %d; want 0", p.InFlight())
	}
}

// TestLookupErrFailsWithoutACall: a Lookup with Err finishes the task with
// it; the gate and the call never see it, and its slot is free again.
func TestLookupErrFailsWithoutACall(t *testing.T) {
	g := &fakeGate{}
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Gate: func() Gate { return g }})
	bad := errors.New("no key")
	task, _, err := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: "1"}}, 0, Job{
		Work:   func(context.Context, int) ([]any, error) { t.Error("a failed lookup called"); return nil, nil },
		Lookup: func(context.Context) Lookup { return Lookup{Err: bad} },
	})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, task)
	if out, err := task.Result(); !errors.Is(err, bad) || out != nil {
		t.Errorf("Result = %v, %v; want nil, %v", out, err, bad)
	}
	if n := g.enterings.Load(); n != 0 {
		t.Errorf("gate asked %d times; want 0", n)
	}
	if p.InFlight() != 0 {
		t.Errorf("places in flight after the failed lookup = %d; want 0", p.InFlight())
	}
}

// waitOn is a Lookup.Wait for a channel the test closes: it wakes its
// waiters from the goroutine that closes it, never from within itself.
type waitOn struct {
	mu     sync.Mutex
	ended  bool
	wakers []func()
}

func (w *waitOn) wait(wake func()) (func() bool, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return nil, true
	}
	w.wakers = append(w.wakers, wake)
	i := len(w.wakers) - 1
	return func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		ok := w.wakers[i] != nil
		w.wakers[i] = nil
		return ok
	}, false
}

func (w *waitOn) end() {
	w.mu.Lock()
	w.ended = true
	wakers := w.wakers
	w.mu.Unlock()
	for _, wake := range wakers {
		if wake != nil {
			wake()
		}
	}
}

// TestLookupWaitHoldsNoSlot: a task told to wait gives back its slot (the
// only one) to the next task, and looks up again when woken.
func TestLookupWaitHoldsNoSlot(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 2})
	var ev waitOn
	var looks atomic.Int32
	follower, _, err := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: "f"}}, 0, Job{
		Work: func(context.Context, int) ([]any, error) { t.Error("the follower called"); return nil, nil },
		Lookup: func(context.Context) Lookup {
			if looks.Add(1) == 1 {
				return Lookup{Wait: ev.wait}
			}
			return Lookup{Hit: true, Outputs: []any{"from the leader"}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	leader, _, err := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: "l"}}, 0, Job{
		Work: func(context.Context, int) ([]any, error) { return []any{"called"}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, leader) // it ran in the one slot while the follower waited
	select {
	case <-follower.Done():
		t.Fatal("the follower finished before it was woken")
	case <-time.After(20 * time.Millisecond):
	}
	ev.end()
	wait(t, follower)
	if out, err := follower.Result(); err != nil || len(out) != 1 || out[0] != "from the leader" {
		t.Errorf("follower Result = %v, %v; want [from the leader]", out, err)
	}
	if n := looks.Load(); n != 2 {
		t.Errorf("the follower looked up %d times; want 2", n)
	}
}

// TestLookupWaitEndsWithTheTask: a waiting task that is removed finishes
// with its cancellation, and its wake is cancelled.
func TestLookupWaitEndsWithTheTask(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1})
	var ev waitOn
	task, _, err := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: "1"}}, 0, Job{
		Work:   func(context.Context, int) ([]any, error) { t.Error("called"); return nil, nil },
		Lookup: func(context.Context) Lookup { return Lookup{Wait: ev.wait} },
	})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev.mu.Lock()
		n := len(ev.wakers)
		ev.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	p.Remove(task)
	wait(t, task)
	if _, err := task.Result(); err == nil {
		t.Error("a removed waiting task finished without an error")
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.wakers[0] != nil {
		t.Error("the removed task's wake was not cancelled")
	}
}

// TestLookupAbandonWhenTheGateSendsBack: a Lookup that promised a call is
// told when the attempt does not reach it.
func TestLookupAbandonWhenTheGateSendsBack(t *testing.T) {
	g := &fakeGate{sendBack: 1}
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Gate: func() Gate { return g }})
	var abandoned, looks atomic.Int32
	task, _, err := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: "1"}}, 0, Job{
		Work: func(context.Context, int) ([]any, error) { return []any{"called"}, nil },
		Lookup: func(context.Context) Lookup {
			looks.Add(1)
			return Lookup{Abandon: func() { abandoned.Add(1) }}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, task)
	if a, l := abandoned.Load(), looks.Load(); a != 1 || l != 2 {
		t.Errorf("abandoned %d, looked up %d; want 1 (the sent-back ask) and 2", a, l)
	}
	if out, err := task.Result(); err != nil || len(out) != 1 {
		t.Errorf("Result = %v, %v; want [called]", out, err)
	}
}

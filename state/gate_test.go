package state

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeGate records what the pool asks of a Gate; it sends back the first
// `sendBack` asks, blocks while `block` is set, and records the previous
// errors it was shown and the errors done was called with.
type fakeGate struct {
	mu        sync.Mutex
	sendBack  int
	block     chan struct{}
	previous  []error
	reported  []error
	closed    atomic.Bool
	enterings atomic.Int32
}

func (g *fakeGate) Enter(ctx context.Context, previous error) (func(error), time.Duration, error) {
	g.enterings.Add(1)
	g.mu.Lock()
	g.previous = append(g.previous, previous)
	if g.sendBack > 0 {
		g.sendBack--
		g.mu.Unlock()
		return nil, time.Millisecond, nil
	}
	block := g.block
	g.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	return func(err error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.reported = append(g.reported, err)
	}, 0, nil
}

func (g *fakeGate) Close() error { g.closed.Store(true); return nil }

func TestGateSeesEveryAttemptAndItsOutcome(t *testing.T) {
	g := &fakeGate{sendBack: 1}
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Gate: func() Gate { return g }})
	boom := errors.New("boom")
	var calls atomic.Int32
	work := func(_ context.Context, n int) ([]any, error) {
		calls.Add(1)
		if n == 1 {
			return nil, boom
		}
		return []any{"ok"}, nil
	}
	retry := func(int, error) (time.Duration, bool) { return time.Millisecond, true }
	prior := errors.New("from bag state")
	task, _, err := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: "1"}}, 0, Job{Work: work, Retry: retry, Previous: prior})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, task)
	if out, err := task.Result(); err != nil || len(out) != 1 {
		t.Fatalf("Result = %v, %v; want [ok]", out, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// The first ask was sent back (no attempt made), then attempt 1 and 2.
	wantPrev := []error{prior, prior, boom}
	if len(g.previous) != len(wantPrev) {
		t.Fatalf("gate asked %d times with %v; want %d", len(g.previous), g.previous, len(wantPrev))
	}
	for i, w := range wantPrev {
		if g.previous[i] != w {
			t.Errorf("ask %d: previous = %v; want %v", i+1, g.previous[i], w)
		}
	}
	if len(g.reported) != 2 || g.reported[0] != boom || g.reported[1] != nil {
		t.Errorf("done reports = %v; want [boom <nil>]", g.reported)
	}
	if got := calls.Load(); got != 2 || task.Attempts() != 2 {
		t.Errorf("calls %d, attempts %d; want 2 and 2 (a sent-back ask is no attempt)", got, task.Attempts())
	}
}

func TestGateWaitEndsWithTheTask(t *testing.T) {
	g := &fakeGate{block: make(chan struct{})}
	p, err := newPool(Config{Parallelism: 1, Buffer: 1, Gate: func() Gate { return g }})
	if err != nil {
		t.Fatal(err)
	}
	task, _, err := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: "1"}}, 0, Job{Work: func(context.Context, int) ([]any, error) {
		t.Error("the call ran although the gate never admitted it")
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for g.enterings.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	p.Remove(task)
	wait(t, task)
	if _, err := task.Result(); !errors.Is(err, ErrInterrupted) {
		t.Errorf("Result of a task removed at the gate = %v; want ErrInterrupted", err)
	}
	if task.CompletedAttempts() != 0 || task.Attempts() != 0 {
		t.Errorf("attempts = %d (completed %d); want 0", task.Attempts(), task.CompletedAttempts())
	}
	// Its slot is free again: another task runs.
	next, _, _ := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: "2"}}, 0, Job{Work: func(context.Context, int) ([]any, error) { return nil, nil }})
	close(g.block)
	wait(t, next)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !g.closed.Load() {
		t.Error("the pool's Close did not close its gate")
	}
}

// limitGate admits every attempt and limits the slots to limit.
type limitGate struct{ limit atomic.Int32 }

func (g *limitGate) Enter(context.Context, error) (func(error), time.Duration, error) {
	return func(error) {}, 0, nil
}
func (g *limitGate) Limit() int { return int(g.limit.Load()) }

func TestGateLimitBoundsTheSlotsAndKeepsPriorities(t *testing.T) {
	g := &limitGate{}
	g.limit.Store(2)
	p := mustPool(t, Config{Parallelism: 8, Buffer: 64, Gate: func() Gate { return g }})
	var mu sync.Mutex
	running, peak := 0, 0
	var order []int
	release := make(chan struct{})
	work := func(prio int) Work {
		return func(context.Context, int) ([]any, error) {
			mu.Lock()
			running++
			peak = max(peak, running)
			order = append(order, prio)
			mu.Unlock()
			<-release
			mu.Lock()
			running--
			mu.Unlock()
			return nil, nil
		}
	}
	var tasks []*Task
	// Two low-priority tasks take both slots; then lows and highs queue.
	for i, prio := range []int{0, 0, 0, 0, 0, 5, 5, 5} {
		task, _, err := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: string(rune('a' + i))}}, 0, Job{Work: work(prio), Priority: prio})
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	if running != 2 {
		t.Errorf("running with limit 2 = %d; want 2", running)
	}
	mu.Unlock()
	// Down to one: the first attempt to end gives its slot up, and from
	// then on one call runs at a time, so the start order is the queue's.
	g.limit.Store(1)
	close(release)
	for _, task := range tasks {
		wait(t, task)
	}
	if peak > 2 {
		t.Errorf("peak running = %d; want at most 2", peak)
	}
	// After the first two, the highs go before the remaining lows.
	want := []int{0, 0, 5, 5, 5, 0, 0, 0}
	for i := range want {
		if order[i] != want[i] {
			t.Errorf("start order by priority = %v; want %v", order, want)
			break
		}
	}
}

func TestRunQueueResize(t *testing.T) {
	q := newRunQueue(10, 2)
	started := make(chan int, 10)
	claims := make([]*claim, 5)
	for i := range claims {
		i := i
		claims[i] = newClaim(0, false, func() { started <- i })
		q.enqueue(claims[i])
	}
	got := func() (n int) {
		time.Sleep(20 * time.Millisecond)
		for {
			select {
			case <-started:
				n++
			default:
				return n
			}
		}
	}
	if n := got(); n != 2 {
		t.Fatalf("started with 2 slots = %d; want 2", n)
	}
	q.resize(3)
	if n := got(); n != 1 {
		t.Errorf("started after growing to 3 = %d; want 1 more", n)
	}
	q.resize(1) // three running, one slot: two releases are absorbed
	q.releaseSlot()
	q.releaseSlot()
	if n := got(); n != 0 {
		t.Errorf("started after shrinking to 1 and two releases = %d; want 0", n)
	}
	q.releaseSlot()
	if n := got(); n != 1 {
		t.Errorf("started after the third release = %d; want 1", n)
	}
}

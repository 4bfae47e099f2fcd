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

func mustPool(t *testing.T, cfg Config) *Pool {
	t.Helper()
	p, err := newPool(cfg)
	if err != nil {
		t.Fatalf("newPool(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func wait(t *testing.T, task *Task) {
	t.Helper()
	select {
	case <-task.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("task %v did not finish", task.Key)
	}
}

func TestNewPoolRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Parallelism: 0, Buffer: 1}, {Parallelism: -1, Buffer: 1}, {Parallelism: 1, Buffer: 0}} {
		if _, err := newPool(cfg); err == nil {
			t.Errorf("newPool(%+v) = nil error, want one", cfg)
		}
	}
}

func TestSubmitRunsAndDeduplicates(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 2, Buffer: 4})
	var calls atomic.Int32
	work := func(context.Context, int) ([]any, error) { calls.Add(1); return []any{"out"}, nil }
	k := TaskKey{Owner: "k", Element: ElementID{ID: "1"}}
	t1, adm, err := p.Submit(context.Background(), k, 0, Job{Work: work})
	if err != nil || adm != Started {
		t.Fatalf("first Submit = %v, %v; want Started", adm, err)
	}
	t2, adm, _ := p.Submit(context.Background(), k, 0, Job{Work: work})
	if adm != Existing || t2 != t1 {
		t.Errorf("second Submit = %v (same task %v); want Existing, same task", adm, t2 == t1)
	}
	wait(t, t1)
	outs, err := t1.Result()
	if err != nil || len(outs) != 1 || outs[0] != "out" {
		t.Errorf("Result = %v, %v; want [out], nil", outs, err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("work ran %d times, want 1", got)
	}
	if got := p.ExpectedLatency(); got <= 0 {
		t.Errorf("ExpectedLatency after one call = %v, want > 0", got)
	}
}

func TestParallelismBound(t *testing.T) {
	const par, n = 3, 12
	p := mustPool(t, Config{Parallelism: par, Buffer: n})
	var running, peak atomic.Int32
	release := make(chan struct{})
	var tasks []*Task
	for i := 0; i < n; i++ {
		task, adm, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: fmt.Sprint(i)}}, 0, Job{Work: func(ctx context.Context, _ int) ([]any, error) {
			now := running.Add(1)
			for {
				old := peak.Load()
				if now <= old || peak.CompareAndSwap(old, now) {
					break
				}
			}
			<-release
			running.Add(-1)
			return nil, nil
		}})
		if adm != Started {
			t.Fatalf("Submit %d = %v, want Started", i, adm)
		}
		tasks = append(tasks, task)
	}
	deadline := time.Now().Add(5 * time.Second)
	for running.Load() < par && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for _, task := range tasks {
		wait(t, task)
	}
	if got := peak.Load(); got != par {
		t.Errorf("peak concurrent calls = %d, want %d", got, par)
	}
}

func TestBufferBoundAndRemove(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 2})
	work := func(context.Context, int) ([]any, error) { return nil, nil }
	a, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "a"}}, 0, Job{Work: work})
	p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "b"}}, 0, Job{Work: work})
	if _, adm, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "c"}}, 20*time.Millisecond, Job{Work: work}); adm != NoRoom {
		t.Fatalf("Submit into a full buffer = %v, want NoRoom", adm)
	}
	wait(t, a)
	if got := p.Held(); got != 2 {
		t.Errorf("Buffered with two finished, uncommitted tasks = %d, want 2", got)
	}
	p.Remove(a)
	p.Remove(a) // twice does nothing
	if got := p.Held(); got != 1 {
		t.Errorf("Buffered after Remove = %d, want 1", got)
	}
	if _, adm, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "c"}}, 0, Job{Work: work}); adm != Started {
		t.Errorf("Submit after Remove = %v, want Started", adm)
	}
}

func TestSubmitWaitsForRoom(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1})
	a, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "a"}}, 0, Job{Work: func(context.Context, int) ([]any, error) { return nil, nil }})
	go func() {
		<-a.Done()
		time.Sleep(10 * time.Millisecond)
		p.Remove(a)
	}()
	if _, adm, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "b"}}, 5*time.Second, Job{Work: func(context.Context, int) ([]any, error) { return nil, nil }}); adm != Started {
		t.Errorf("Submit waiting for a place freed by Remove = %v, want Started", adm)
	}
}

func TestRemoveCancelsRunningWork(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1})
	started := make(chan struct{})
	task, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "a"}}, 0, Job{Work: func(ctx context.Context, _ int) ([]any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	<-started
	p.Remove(task)
	wait(t, task)
	if _, err := task.Result(); !errors.Is(err, context.Canceled) {
		t.Errorf("Result of a removed task = %v, want context.Canceled", err)
	}
	if p.Lookup(task.Key) != nil || len(p.ForOwner("k")) != 0 {
		t.Error("removed task is still indexed")
	}
}

func TestPanicBecomesError(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 2})
	for _, v := range []any{"boom", nil} {
		task, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: fmt.Sprint(v)}}, 0, Job{Work: func(context.Context, int) ([]any, error) { panic(v) }})
		wait(t, task)
		_, err := task.Result()
		var pe *PanicError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "pool_test.go") {
			t.Errorf("panic(%v): Result error = %v, want *PanicError with a stack", v, err)
		}
	}
}

func TestResetWithStuckWorkDoesNotDeadlock(t *testing.T) {
	p, err := Shared("reset-test", Config{Parallelism: 1, Buffer: 2})
	if err != nil {
		t.Fatal(err)
	}
	stuck, running := make(chan struct{}), make(chan struct{})
	defer close(stuck)
	p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "stuck"}}, 0, Job{Work: func(context.Context, int) ([]any, error) {
		close(running)
		<-stuck
		return nil, nil
	}})
	<-running
	p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "queued"}}, 0, Job{Work: func(context.Context, int) ([]any, error) { return nil, nil }})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := Reset(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Reset with work ignoring cancellation = %v, want DeadlineExceeded", err)
	}
	again, _ := Shared("reset-test", Config{Parallelism: 1, Buffer: 2})
	if again == p || again.Len() != 0 {
		t.Error("Shared after Reset returned the old pool or a non-empty one")
	}
	if _, _, err := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "late"}}, 0, Job{Work: func(context.Context, int) ([]any, error) { return nil, nil }}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit on a reset pool = %v, want ErrClosed", err)
	}
}

func TestConcurrentSubmitters(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 8, Buffer: 1000})
	var calls atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ { // every goroutine submits the same 200 keys
				p.Submit(context.Background(), TaskKey{fmt.Sprint(i % 10), ElementID{ID: fmt.Sprint(i)}}, time.Second, Job{Work: func(context.Context, int) ([]any, error) {
					calls.Add(1)
					return nil, nil
				}})
			}
		}()
	}
	wg.Wait()
	for k := 0; k < 10; k++ { // every task must have run before Close cancels the rest
		for _, task := range p.ForOwner(fmt.Sprint(k)) {
			wait(t, task)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 200 {
		t.Errorf("200 distinct elements submitted by 8 goroutines ran %d times, want 200", got)
	}
}

func TestLocalRetryHoldsNoSlotWhileWaiting(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 2})
	var attempts []int
	var mu sync.Mutex
	retry := func(attempt int, err error) (time.Duration, bool) { return 50 * time.Millisecond, attempt < 3 }
	flaky, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "flaky"}}, 0, Job{Work: func(_ context.Context, attempt int) ([]any, error) {
		mu.Lock()
		attempts = append(attempts, attempt)
		mu.Unlock()
		if attempt < 3 {
			return nil, errors.New("not yet")
		}
		return []any{"ok"}, nil
	}, Retry: retry})
	// While flaky waits for its retry, the only slot is free for another task.
	other, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "other"}}, 0, Job{Work: func(context.Context, int) ([]any, error) { return nil, nil }})
	select {
	case <-other.Done():
	case <-flaky.Done():
		t.Fatal("flaky finished before the other task could use the slot")
	case <-time.After(5 * time.Second):
		t.Fatal("the other task never got the slot")
	}
	wait(t, flaky)
	outs, err := flaky.Result()
	if err != nil || len(outs) != 1 || flaky.Attempts() != 3 {
		t.Errorf("after local retries: %v, %v, %d attempts; want [ok], nil, 3", outs, err, flaky.Attempts())
	}
	if want := []int{1, 2, 3}; !reflect.DeepEqual(attempts, want) {
		t.Errorf("attempt numbers = %v, want %v", attempts, want)
	}
}

func TestRemoveDuringRetryWaitFinishesTask(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1})
	task, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "a"}}, 0, Job{Work: func(context.Context, int) ([]any, error) {
		return nil, errors.New("fails")
	}, Retry: func(int, error) (time.Duration, bool) { return time.Hour, true }})
	deadline := time.Now().Add(5 * time.Second)
	for task.Attempts() == 0 || task.Status() != Waiting {
		if time.Now().After(deadline) {
			t.Fatal("the task never started waiting for its retry")
		}
		time.Sleep(time.Millisecond)
	}
	p.Remove(task)
	wait(t, task)
	if _, err := task.Result(); !errors.Is(err, context.Canceled) {
		t.Errorf("Result of a task removed while waiting to retry = %v, want context.Canceled", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Errorf("Close after a cancelled retry wait: %v (a timer was not accounted for)", err)
	}
}

// TestRetryWaitFreesPlaceInFlight: a task waiting out its backoff gives back
// its place in flight, so that with a buffer of one another task runs
// meanwhile; the retry then queues for a place again.
func TestRetryWaitFreesPlaceInFlight(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Hold: 2})
	retry := func(attempt int, err error) (time.Duration, bool) { return 200 * time.Millisecond, attempt < 2 }
	flaky, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "flaky"}}, 0, Job{Work: func(_ context.Context, attempt int) ([]any, error) {
		if attempt < 2 {
			return nil, errors.New("not yet")
		}
		return []any{"ok"}, nil
	}, Retry: retry})
	deadline := time.Now().Add(5 * time.Second)
	for flaky.Status() != Waiting || flaky.Attempts() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the flaky task never started waiting for its retry")
		}
		time.Sleep(time.Millisecond)
	}
	if got := p.InFlight(); got != 0 {
		t.Errorf("places in flight while the only task waits to retry = %d, want 0", got)
	}
	other, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "other"}}, 0, Job{Work: func(context.Context, int) ([]any, error) { return nil, nil }})
	select {
	case <-other.Done():
	case <-flaky.Done():
		t.Fatal("the retrying task finished before the other could take its place")
	case <-time.After(5 * time.Second):
		t.Fatal("the other task never got the place in flight")
	}
	wait(t, flaky)
	if outs, err := flaky.Result(); err != nil || len(outs) != 1 {
		t.Errorf("after its retry: %v, %v; want [ok], nil", outs, err)
	}
}

// TestEvictIdle: the tasks of an owner that was not touched since the
// cutoff are removed, freeing their places; a touched owner keeps its tasks.
func TestEvictIdle(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	p := mustPool(t, Config{Parallelism: 2, Buffer: 4, Now: clock})
	done := func(context.Context, int) ([]any, error) { return []any{"x"}, nil }
	gone, _, _ := p.Submit(context.Background(), TaskKey{"moved", ElementID{ID: "1"}}, 0, Job{Work: done})
	alive, _, _ := p.Submit(context.Background(), TaskKey{"live", ElementID{ID: "1"}}, 0, Job{Work: done})
	wait(t, gone)
	wait(t, alive)
	advance(time.Minute)
	p.Touch("live", false)
	evicted := p.EvictIdle(now.Add(-30 * time.Second))
	if len(evicted) != 1 || evicted[0] != gone {
		t.Fatalf("EvictIdle = %v, want only the task of the untouched owner", evicted)
	}
	if p.Lookup(gone.Key) != nil || p.Lookup(alive.Key) == nil {
		t.Errorf("after eviction: moved known %v, live known %v; want false, true", p.Lookup(gone.Key) != nil, p.Lookup(alive.Key) != nil)
	}
	if got := p.Held(); got != 1 {
		t.Errorf("places held after eviction = %d, want 1", got)
	}
}

// TestInterruptedTaskIsNeverASuccess: a task removed while its call runs
// finishes with an error wrapping ErrInterrupted, even when its Work returns
// nil on cancellation, so nobody commits the element without its outputs.
func TestInterruptedTaskIsNeverASuccess(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1})
	started := make(chan struct{})
	task, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "a"}}, 0, Job{Work: func(ctx context.Context, _ int) ([]any, error) {
		close(started)
		<-ctx.Done()
		return []any{"partial"}, nil // a Work that swallows its cancellation
	}})
	<-started
	p.Remove(task)
	wait(t, task)
	outs, err := task.Result()
	if !errors.Is(err, ErrInterrupted) || outs != nil || !task.Interrupted() {
		t.Errorf("Result = %v, %v (interrupted %v); want nil outputs and ErrInterrupted", outs, err, task.Interrupted())
	}
}

// TestEvictIdleUnbuffered: the sweep of unbuffered tasks takes only those,
// of untouched owners; tasks with places are left to eviction for room.
func TestEvictIdleUnbuffered(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := mustPool(t, Config{Parallelism: 2, Buffer: 4, Now: clock})
	done := func(context.Context, int) ([]any, error) { return nil, nil }
	placed, _, _ := p.Submit(context.Background(), TaskKey{"moved", ElementID{ID: "1"}}, 0, Job{Work: done})
	head, _, _ := p.StartUnbuffered(TaskKey{"moved", ElementID{ID: "2"}}, Job{Work: done})
	wait(t, placed)
	wait(t, head)
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if got := p.EvictIdleUnbuffered(now.Add(-time.Minute)); len(got) != 1 || got[0] != head {
		t.Fatalf("EvictIdleUnbuffered = %v, want only the unbuffered task", got)
	}
	if p.Lookup(placed.Key) == nil {
		t.Error("the task with a place was swept; it waits for eviction for room")
	}
}

// TestDisplaceUnbuffered: an owner keeps one unbuffered task; the others of
// that owner are removed and cancelled, its tasks with places and other
// owners' tasks are left alone.
func TestDisplaceUnbuffered(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 4, Buffer: 4})
	block := func(ctx context.Context, _ int) ([]any, error) { <-ctx.Done(); return nil, ctx.Err() }
	placed, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "1"}}, 0, Job{Work: block})
	later, _, _ := p.StartUnbuffered(TaskKey{"k", ElementID{ID: "3"}}, Job{Work: block})
	other, _, _ := p.StartUnbuffered(TaskKey{"other", ElementID{ID: "9"}}, Job{Work: block})
	t.Cleanup(func() { p.Remove(placed); p.Remove(other) })
	if got := p.DisplaceUnbuffered(TaskKey{"k", ElementID{ID: "3"}}); len(got) != 0 {
		t.Errorf("DisplaceUnbuffered of the owner's own unbuffered task = %v, want none", got)
	}
	got := p.DisplaceUnbuffered(TaskKey{"k", ElementID{ID: "2"}})
	if len(got) != 1 || got[0] != later {
		t.Fatalf("DisplaceUnbuffered = %v, want the owner's other unbuffered task", got)
	}
	wait(t, later)
	if p.Lookup(later.Key) != nil || !later.Interrupted() {
		t.Errorf("displaced task: in pool %v, interrupted %v; want removed and cancelled", p.Lookup(later.Key) != nil, later.Interrupted())
	}
	if p.Lookup(placed.Key) == nil || p.Lookup(other.Key) == nil {
		t.Error("a task with a place, or another owner's unbuffered task, was displaced")
	}
}

// TestTouchArrivals: Touch returns when the owner's elements came before
// and after it: the latest, how many gaps are known, the gap between the
// latest two, and the mean gap, which each element moves by a quarter of
// the difference and a timer leaves alone. A first gap of 0 (two elements
// at once) is a gap like any other.
func TestTouchArrivals(t *testing.T) {
	now := time.Unix(100, 0)
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Now: func() time.Time { return now }})
	at := func(ms int64) time.Time { return time.Unix(100, ms*1e6) }
	const ms = time.Millisecond
	steps := []struct {
		owner   string
		advance time.Duration
		element bool
		want    Arrivals // after the touch
	}{
		{"k", 0, true, Arrivals{Last: at(0)}},                                                      // the first element: no gap yet
		{"k", 200 * ms, true, Arrivals{Last: at(200), Gaps: 1, Gap: 200 * ms, MeanGap: 200 * ms}},  // the one gap so far
		{"k", 100 * ms, false, Arrivals{Last: at(200), Gaps: 1, Gap: 200 * ms, MeanGap: 200 * ms}}, // a timer changes nothing
		{"k", 500 * ms, true, Arrivals{Last: at(800), Gaps: 2, Gap: 600 * ms, MeanGap: 300 * ms}},  // 600 ms weighs a quarter: 200 + 400/4
		{"k", 0, true, Arrivals{Last: at(800), Gaps: 3, Gap: 0, MeanGap: 225 * ms}},                // a burst: 0 ms weighs a quarter too
		{"j", 0, true, Arrivals{Last: at(800)}},
		{"j", 0, true, Arrivals{Last: at(800), Gaps: 1}},                                           // a first gap of 0
		{"j", 400 * ms, true, Arrivals{Last: at(1200), Gaps: 2, Gap: 400 * ms, MeanGap: 100 * ms}}, // weighs a quarter: the mean was known
	}
	same := func(a, b Arrivals) bool {
		return a.Last.Equal(b.Last) && a.Gaps == b.Gaps && a.Gap == b.Gap && a.MeanGap == b.MeanGap
	}
	prev := map[string]Arrivals{}
	for i, st := range steps {
		now = now.Add(st.advance)
		before, after := p.Touch(st.owner, st.element)
		if !same(before, prev[st.owner]) || !same(after, st.want) {
			t.Errorf("step %d (%s): Touch = (%+v, %+v), want (%+v, %+v)", i, st.owner, before, after, prev[st.owner], st.want)
		}
		prev[st.owner] = after
	}
}

package state

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// closer is a shared value that records whether it was closed.
type closer struct{ closed bool }

func (c *closer) Close() error { c.closed = true; return nil }

// TestRegistryReleasesIdleIDs: an ID not looked up for ReleaseAfter is let
// go (its pool closed, its values closed) by the next lookup of any ID, once
// its pool has no unfinished task; an ID in use stays, and so does one whose
// pool still runs a call.
func TestRegistryReleasesIdleIDs(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	r := NewRegistry()
	r.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	cfg := Config{Parallelism: 1, Buffer: 1}

	done, _ := r.Shared("done", cfg)
	hub := &closer{}
	r.SharedValue("done", func() (any, error) { return hub, nil })
	finished, _, _ := done.Submit(context.Background(), TaskKey{"k", ElementID{ID: "1"}}, 0, Job{Work: func(context.Context, int) ([]any, error) { return nil, nil }})
	wait(t, finished)

	busy, _ := r.Shared("busy", cfg)
	release := make(chan struct{})
	running, _, _ := busy.Submit(context.Background(), TaskKey{"k", ElementID{ID: "1"}}, 0, Job{Work: func(ctx context.Context, _ int) ([]any, error) {
		<-release
		return nil, nil
	}})

	advance(ReleaseAfter + time.Minute)
	r.Shared("live", cfg) // any lookup sweeps
	if got, want := r.Len(), 2; got != want {
		t.Errorf("after ReleaseAfter: the registry holds %d IDs, want %d (the live one and the one still running a call)", got, want)
	}
	if !hub.closed {
		t.Error("the released ID's value was not closed")
	}
	if _, _, err := done.Submit(context.Background(), TaskKey{"k", ElementID{ID: "2"}}, 0, Job{Work: func(context.Context, int) ([]any, error) { return nil, nil }}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit on a released pool = %v, want ErrClosed", err)
	}
	if again, _ := r.Shared("done", cfg); again == done {
		t.Error("a released ID's lookup returned its old pool")
	}

	close(release)
	wait(t, running)
	advance(ReleaseAfter + time.Minute)
	r.Shared("live", cfg) // sweeps again: the pool whose call ended goes, and so does "done", idle since
	if got := r.Len(); got != 1 {
		t.Errorf("the registry holds %d IDs, want 1 (the live one)", got)
	}
	advance(ReleaseAfter + time.Minute)
	if n, err := r.ReleaseIdle(now.Add(-ReleaseAfter)); err != nil || n != 1 || r.Len() != 0 {
		t.Errorf("ReleaseIdle = %d, %v (left %d); want the last one released", n, err, r.Len())
	}
}

// TestRegistryKeepsPoolsWithRemovedCallsRunning: a pool whose only call was
// removed but still runs (it ignores its cancellation) is not idle: the
// registry keeps it, and no lookup of another ID waits for that call.
func TestRegistryKeepsPoolsWithRemovedCallsRunning(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	r := NewRegistry()
	r.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p, _ := r.Shared("a", Config{Parallelism: 1, Buffer: 1})
	release := make(chan struct{})
	started := make(chan struct{})
	task, _, _ := p.Submit(context.Background(), TaskKey{"k", ElementID{ID: "1"}}, 0, Job{Work: func(context.Context, int) ([]any, error) {
		close(started)
		<-release // ignores its context
		return nil, nil
	}})
	<-started
	p.Remove(task)
	mu.Lock()
	now = now.Add(ReleaseAfter + time.Minute)
	mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.Shared("b", Config{Parallelism: 1, Buffer: 1})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a lookup of another ID waited for a removed call of an idle pool")
	}
	if r.Len() != 2 {
		t.Errorf("the registry holds %d IDs, want 2: the pool still runs a call", r.Len())
	}
	close(release)
	wait(t, task)
}

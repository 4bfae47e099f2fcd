package state

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// Registry maps a transform's UUID to its Pool in one worker process.
//
// Beam creates several instances of a DoFn in one worker (one per concurrent
// bundle); they must share one Pool so that Parallelism and Buffer bound the
// whole transform in the process, and so that a commit callback on one
// instance finds work started by another. The DoFn carries a UUID fixed at
// pipeline construction, and the registry maps it to the Pool.
//
// A transform may keep other per-process objects next to its Pool (the async
// transform's event listener, which must see an element's events from every
// instance): SharedValue holds them, so that they too are shared by all
// instances and go away with Reset.
//
// The process uses one Registry, Default: the only process-global state of
// the project. Tests that model several workers in one process give each its
// own Registry.
//
// A worker process can outlive many pipelines (a test binary, a loopback
// worker, a long-lived worker pool), and a transform's ID never comes back
// once its pipeline is done, so the registry lets go of what nobody uses:
// an ID not looked up for ReleaseAfter whose Pool has no unfinished task is
// released (its Pool closed, its values closed when they are io.Closers) by
// the next lookup of any ID. A transform still running looks its ID up at
// every callback; one that is quiet that long starts again from its bag
// state, as after a restart.
type Registry struct {
	// Now is the registry's clock; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	pools  map[string]*Pool
	values map[string]any
	used   map[string]time.Time // last lookup of each ID
	swept  time.Time
}

// ReleaseAfter is how long an ID may go without a lookup before the registry
// releases it (see Registry).
const ReleaseAfter = 10 * time.Minute

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{pools: map[string]*Pool{}, values: map[string]any{}, used: map[string]time.Time{}}
}

func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// lookedUp records a lookup of id and, at most once a minute, releases the
// IDs idle for ReleaseAfter; r.mu is held. What it released is closed by the
// caller, after the lock is released.
func (r *Registry) lookedUp(id string) (released []any) {
	now := r.now()
	r.used[id] = now
	if now.Sub(r.swept) < time.Minute {
		return nil
	}
	r.swept = now
	return r.takeIdle(now.Add(-ReleaseAfter))
}

// takeIdle removes the IDs not looked up since cutoff whose Pool (if any) has
// no unfinished task, and returns their Pools and values; r.mu is held.
func (r *Registry) takeIdle(cutoff time.Time) []any {
	var out []any
	for id, at := range r.used {
		if !at.Before(cutoff) {
			continue
		}
		if p := r.pools[id]; p != nil {
			if p.Unfinished() > 0 {
				continue
			}
			out = append(out, p)
		}
		if v, ok := r.values[id]; ok {
			out = append(out, v)
		}
		delete(r.pools, id)
		delete(r.values, id)
		delete(r.used, id)
	}
	return out
}

// ReleaseIdle releases at once the IDs not looked up since cutoff whose Pool
// has no unfinished task (the registry does it by itself for ReleaseAfter;
// see Registry), and returns how many it released.
func (r *Registry) ReleaseIdle(cutoff time.Time) (int, error) {
	r.mu.Lock()
	idle := r.takeIdle(cutoff)
	r.mu.Unlock()
	return len(idle), closeAll(context.Background(), idle)
}

// Len returns how many IDs the registry holds (a Pool, values, or both).
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := map[string]bool{}
	for id := range r.pools {
		ids[id] = true
	}
	for id := range r.values {
		ids[id] = true
	}
	return len(ids)
}

// closeAll closes released Pools (waiting for their goroutines until ctx
// ends) and values that are io.Closers.
func closeAll(ctx context.Context, objs []any) error {
	var errs []error
	for _, o := range objs {
		switch o := o.(type) {
		case *Pool:
			if err := o.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		case io.Closer:
			if err := o.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Default is the process's registry.
var Default = NewRegistry()

// Shared returns the registry's Pool for the transform id, creating it with
// cfg on first use. Later calls with the same id get the same Pool whatever
// cfg they pass: one id is one transform, whose settings are fixed.
func (r *Registry) Shared(id string, cfg Config) (*Pool, error) {
	r.mu.Lock()
	released := r.lookedUp(id)
	p := r.pools[id]
	var err error
	if p == nil {
		if p, err = newPool(cfg); err == nil {
			r.pools[id] = p
		}
	}
	r.mu.Unlock()
	closeAll(context.Background(), released) // idle pools have no goroutines
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Pools returns the registry's pools, for reports (the bench's peak held).
func (r *Registry) Pools() []*Pool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Pool, 0, len(r.pools))
	for _, p := range r.pools {
		out = append(out, p)
	}
	return out
}

// SharedValue returns the registry's value for id, creating it with create on
// first use (an error from create is returned and nothing is kept). Values
// and Pools have separate name spaces.
func (r *Registry) SharedValue(id string, create func() (any, error)) (any, error) {
	r.mu.Lock()
	released := r.lookedUp(id)
	v, ok := r.values[id]
	var err error
	if !ok {
		if v, err = create(); err == nil {
			r.values[id] = v
		}
	}
	r.mu.Unlock()
	closeAll(context.Background(), released)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Reset empties the registry: every Pool is detached, its tasks cancelled and
// its goroutines waited for until ctx ends; then every shared value that is
// an io.Closer is closed. It models a worker restart: DoFns
// that call Shared afterwards get new, empty Pools and reschedule what their
// bag state still holds.
//
// Reset cannot deadlock with running work: the registry lock is released
// before anything is waited for, and a Work that ignores cancellation only
// makes Reset return ctx.Err() when ctx ends.
func (r *Registry) Reset(ctx context.Context) error {
	r.mu.Lock()
	pools, values := r.pools, r.values
	r.pools, r.values, r.used = map[string]*Pool{}, map[string]any{}, map[string]time.Time{}
	r.mu.Unlock()
	objs := make([]any, 0, len(pools)+len(values))
	for _, p := range pools {
		objs = append(objs, p) // pools first: their tasks may still use the values
	}
	for _, v := range values {
		objs = append(objs, v)
	}
	return closeAll(ctx, objs)
}

// Shared is Default.Shared.
func Shared(id string, cfg Config) (*Pool, error) { return Default.Shared(id, cfg) }

// Reset is Default.Reset: for tests, and to model a worker restart.
func Reset(ctx context.Context) error { return Default.Reset(ctx) }

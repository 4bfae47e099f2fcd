package state

import (
	"context"
	"errors"
	"io"
	"sync"
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
type Registry struct {
	mu     sync.Mutex
	pools  map[string]*Pool
	values map[string]any
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{pools: map[string]*Pool{}, values: map[string]any{}} }

// Default is the process's registry.
var Default = NewRegistry()

// Shared returns the registry's Pool for the transform id, creating it with
// cfg on first use. Later calls with the same id get the same Pool whatever
// cfg they pass: one id is one transform, whose settings are fixed.
func (r *Registry) Shared(id string, cfg Config) (*Pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pools[id]; p != nil {
		return p, nil
	}
	p, err := NewPool(cfg)
	if err != nil {
		return nil, err
	}
	r.pools[id] = p
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
	defer r.mu.Unlock()
	if v, ok := r.values[id]; ok {
		return v, nil
	}
	v, err := create()
	if err != nil {
		return nil, err
	}
	r.values[id] = v
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
	r.pools, r.values = map[string]*Pool{}, map[string]any{}
	r.mu.Unlock()
	var errs []error
	for _, p := range pools {
		if err := p.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, v := range values {
		if c, ok := v.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Shared is Default.Shared.
func Shared(id string, cfg Config) (*Pool, error) { return Default.Shared(id, cfg) }

// Reset is Default.Reset: for tests, and to model a worker restart.
func Reset(ctx context.Context) error { return Default.Reset(ctx) }

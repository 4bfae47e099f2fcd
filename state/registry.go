package state

import (
	"context"
	"errors"
	"sync"
)

// The registry is the one piece of process-global state in this project.
// Beam creates several instances of a DoFn in one worker (one per concurrent
// bundle); they must share one Pool so that Parallelism and Buffer bound the
// whole transform in the process, and so that a commit callback on one
// instance finds work started by another. The DoFn carries a UUID fixed at
// pipeline construction, and the registry maps it to the Pool.
var registry = struct {
	sync.Mutex
	pools map[string]*Pool
}{pools: map[string]*Pool{}}

// Shared returns the process's Pool for the transform id, creating it with
// cfg on first use. Later calls with the same id get the same Pool whatever
// cfg they pass: one id is one transform, whose settings are fixed.
func Shared(id string, cfg Config) (*Pool, error) {
	registry.Lock()
	defer registry.Unlock()
	if p := registry.pools[id]; p != nil {
		return p, nil
	}
	p, err := NewPool(cfg)
	if err != nil {
		return nil, err
	}
	registry.pools[id] = p
	return p, nil
}

// Reset empties the registry: every Pool is detached, its tasks cancelled and
// its goroutines waited for until ctx ends. It is for tests, and models a
// worker restart: DoFns that call Shared afterwards get new, empty Pools and
// reschedule what their bag state still holds.
//
// Reset cannot deadlock with running work: the registry lock is released
// before anything is waited for, and a Work that ignores cancellation only
// makes Reset return ctx.Err() when ctx ends.
func Reset(ctx context.Context) error {
	registry.Lock()
	pools := registry.pools
	registry.pools = map[string]*Pool{}
	registry.Unlock()
	var errs []error
	for _, p := range pools {
		if err := p.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

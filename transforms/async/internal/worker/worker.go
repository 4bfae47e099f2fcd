package worker

// The transform's per-process object: what every DoFn instance of one
// transform shares in a worker process, beside the pool.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/asyncbeam/asyncbeam/transforms/cache"
	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// worker is one transform's shared object in one worker process: its event
// and batch counts, its listeners' hub and its result cache. The state
// registry holds it under the transform's ID, beside the pool (which owns
// the guard as its gate), and closes it on Reset or when the transform goes
// idle. The hub and the cache are built on first use, each on its own: one
// that cannot be built is tried again at its next use and keeps the other
// from nothing.
type worker struct {
	counts *eventCounts
	batch  *batchStats

	hub   atomic.Pointer[Hub]         // nil until built, or without listeners
	cache atomic.Pointer[resultCache] // nil until built, or without WithCache

	mu     sync.Mutex // builds hub and cache; guards closed
	closed bool
}

// errWorkerClosed is the error of a part asked for after a Reset closed
// the object (an instance that looked it up before the Reset).
var errWorkerClosed = errors.New("async: the transform's per-process object was closed (a worker reset)")

func newWorker() *worker {
	return &worker{
		counts: &eventCounts{ledger: ledger.New(len(eventTally{}.vector()))},
		batch:  &batchStats{published: ledger.New(2)},
	}
}

// hubOf returns the listeners' hub, building it on first use; nil without
// listeners.
func (w *worker) hubOf(f *Core) (*Hub, error) {
	if len(f.Listeners) == 0 {
		return nil, nil
	}
	return buildOnce(w, &w.hub, func() (*Hub, error) { return newHub(f.Listeners) })
}

// cacheOf returns the result cache, building it on first use; nil without
// WithCache.
func (w *worker) cacheOf(f *Core) (*resultCache, error) {
	if f.Cache == nil {
		return nil, nil
	}
	return buildOnce(w, &w.cache, func() (*resultCache, error) {
		c, err := f.newResultCache()
		if err != nil {
			return nil, fmt.Errorf("async: %s: the result cache: %w", f.Name, err)
		}
		return c, nil
	})
}

// buildOnce returns *part, building it under w.mu when it is not built yet;
// a build that fails keeps nothing, and the next use tries again.
func buildOnce[T any](w *worker, part *atomic.Pointer[T], build func() (*T, error)) (*T, error) {
	if p := part.Load(); p != nil {
		return p, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errWorkerClosed
	}
	if p := part.Load(); p != nil {
		return p, nil
	}
	p, err := build()
	if err != nil {
		return nil, err
	}
	part.Store(p)
	return p, nil
}

// newResultCache builds the cache WithCache asked for.
func (f *Core) newResultCache() (*resultCache, error) {
	local, err := cache.NewLocal(f.Cache.Size, f.Cache.TTL, f.clock.Now)
	if err != nil {
		return nil, err
	}
	rc := &resultCache{Local: local, Shape: f.CachedShape(), published: ledger.New(len(cacheStats{}.vector()))}
	if f.Cache.Redis != "" {
		if rc.shared, err = cache.NewShared(f.SharedCache()); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

// Close closes the listeners and the connection to Redis, if they were
// built; neither is built after it.
func (w *worker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	var errs []error
	if h := w.hub.Load(); h != nil {
		errs = append(errs, h.Close())
	}
	if c := w.cache.Load(); c != nil {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// worker returns the transform's per-process object. It is looked up on
// every use rather than kept, so that a registry Reset (a simulated worker
// restart) is seen at once; the instance keeps the last one it found for
// the counts taken on the pool's goroutines (see eventCounts).
func (f *Core) worker() *worker {
	v, _ := f.Registry().SharedValue(f.ID, func() (any, error) { return newWorker(), nil })
	w := v.(*worker)
	if f.last != nil && f.last.Load() != w {
		f.last.Store(w)
	}
	return w
}

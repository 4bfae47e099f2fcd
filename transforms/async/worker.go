package async

// The transform's per-process object: what every DoFn instance of one
// transform shares in a worker process, beside the pool.

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/asyncbeam/asyncbeam/transforms/cache"
	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// worker is one transform's shared object in one worker process: its
// listeners' hub, its result cache, its event counts and its batch counts.
// The state registry holds it under the transform's ID, beside the pool
// (which owns the guard as its gate), and closes it on Reset or when the
// transform goes idle. Its parts are fixed when it is made.
type worker struct {
	hub    *hub         // nil without listeners
	cache  *resultCache // nil without WithCache
	counts *eventCounts
	batch  *batchStats
}

// newWorker builds the transform's per-process object. A listener or a
// cache that cannot be built is an error, and nothing is kept.
func (f *core) newWorker() (*worker, error) {
	w := &worker{
		counts: &eventCounts{ledger: ledger.New(len(eventTally{}.vector()))},
		batch:  &batchStats{published: ledger.New(2)},
	}
	if len(f.Listeners) > 0 {
		h, err := newHub(f.Listeners)
		if err != nil {
			return nil, err
		}
		w.hub = h
	}
	if f.Cache != nil {
		rc, err := f.newResultCache()
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("async: %s: the result cache: %w", f.Name, err)
		}
		w.cache = rc
	}
	return w, nil
}

// newResultCache builds the cache WithCache asked for.
func (f *core) newResultCache() (*resultCache, error) {
	local, err := cache.NewLocal(f.Cache.Size, f.Cache.TTL, f.clock.Now)
	if err != nil {
		return nil, err
	}
	rc := &resultCache{local: local, shape: f.cachedShape(), published: ledger.New(len(cacheStats{}.vector()))}
	if f.Cache.Redis != "" {
		if rc.shared, err = cache.NewShared(f.sharedCache()); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

// Close closes the listeners and the connection to Redis.
func (w *worker) Close() error {
	var errs []error
	if w.hub != nil {
		errs = append(errs, w.hub.Close())
	}
	if w.cache != nil {
		errs = append(errs, w.cache.Close())
	}
	return errors.Join(errs...)
}

// worker returns the transform's per-process object. It is looked up on
// every use rather than kept, so that a registry Reset (a simulated worker
// restart) is seen at once; the instance keeps the last one it found for
// the counts taken on the pool's goroutines (see eventCounts).
func (f *core) worker() (*worker, error) {
	v, err := f.reg().SharedValue(f.ID, func() (any, error) { return f.newWorker() })
	if err != nil {
		return nil, err
	}
	w := v.(*worker)
	if f.last != nil && f.last.Load() != w {
		f.last.Store(w)
	}
	return w, nil
}

// workerOrLast is worker, or on an error the last one this instance found
// (nil if none): for the counts, which must not be lost because a listener
// or the cache cannot be rebuilt after a Reset.
func (f *core) workerOrLast() *worker {
	w, err := f.worker()
	if err == nil {
		return w
	}
	slog.Error("async: the transform's per-process object cannot be rebuilt", "transform", f.Name, "err", err)
	if f.last != nil {
		return f.last.Load()
	}
	return nil
}

package worker

// An instance's way to the transform's per-process object (worker.go) and
// its parts: the object is looked up in the registry on every use, and its
// listeners' hub and result cache are built on first use.

import (
	"fmt"
	"log/slog"

	"github.com/asyncbeam/asyncbeam/transforms/cache"
	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

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

// Events returns the transform's hub in this process, or nil without
// listeners. Like pool, it is looked up on every use so that a registry Reset
// is seen at once.
func (f *Core) Events() *Hub {
	if len(f.Listeners) == 0 {
		return nil
	}
	h, err := f.worker().hubOf(f)
	if err != nil {
		// Setup made the hub; a failure now means a Reset since, and a Setup
		// that no longer succeeds.
		slog.Error("async: the event listener cannot be rebuilt", "transform", f.Name, "err", err)
		return nil
	}
	return h
}

// ResultCache returns this transform's cache in this process, or nil
// without WithCache.
func (f *Core) ResultCache() (*resultCache, error) {
	if f.Cache == nil {
		return nil, nil
	}
	return f.worker().cacheOf(f)
}

// eventCounts returns this transform's event counts in this process, as
// the instance last found them (countEvent runs for every event, on the
// pool's goroutines), or from the registry.
func (f *Core) eventCounts() *eventCounts {
	if f.last != nil {
		if w := f.last.Load(); w != nil {
			return w.counts
		}
	}
	return f.worker().counts
}

// batchStats returns this transform's request counts in this process.
func (f *Core) batchStats() *batchStats {
	return f.worker().batch
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

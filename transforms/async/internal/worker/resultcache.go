package worker

// A transform's result cache in one worker process, and its counts. What
// an element's job does with it is in cachedjob.go.

import (
	"sync/atomic"

	"github.com/asyncbeam/asyncbeam/transforms/cache"
	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// resultCache is a transform's cache in one worker process: one per
// transform, in the registry, so that every DoFn instance and bundle of
// the worker shares it.
type resultCache struct {
	Local  *cache.Local
	shared *cache.Shared // nil without Redis
	flight cache.Flight
	// hits: attempts answered from the cache; misses: calls made for a
	// lookup (a follower counts once, as a hit or as a miss when it leads;
	// under BatchParDo, elements sent in a request).
	hits, Misses atomic.Int64
	// Shape is the cached types' description, in every key (cachetypes.go).
	Shape []byte

	published *ledger.Ledger // of cacheStats.vector
}

// cacheStats are the counts published as metrics.
type cacheStats struct{ hits, misses, evictions, sharedErrors int64 }

func (s cacheStats) vector() []int64 { return []int64{s.hits, s.misses, s.evictions, s.sharedErrors} }

// stats returns the cache's counts now.
func (c *resultCache) stats() cacheStats {
	s := cacheStats{hits: c.hits.Load(), misses: c.Misses.Load(), evictions: c.Local.Stats().Evictions}
	if c.shared != nil {
		s.sharedErrors = c.shared.Stats().Errors
	}
	return s
}

// Close closes the connection to Redis (the registry closes its values).
func (c *resultCache) Close() error {
	if c.shared != nil {
		return c.shared.Close()
	}
	return nil
}

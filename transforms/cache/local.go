package cache

import (
	"fmt"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Local is a worker's cache: at most Size entries, least recently used out
// first, each kept for at most TTL after it was added. Safe for concurrent
// use.
//
// It is golang-lru's plain LRU with a deadline per entry, checked on Get,
// rather than the library's expirable LRU: that one starts a goroutine per
// cache that nothing can stop (v2.0.7), and reads the wall clock, where
// Local takes its clock from the caller (tests, the fault simulator). An
// expired entry is never returned; it stays until newer entries push it
// out or an Add replaces it. Size counts entries, not bytes.
type Local struct {
	lru *lru.Cache[Key, entry]
	ttl time.Duration
	now func() time.Time

	hits, misses, evictions, expired atomic.Int64
}

type entry struct {
	value   []byte
	expires time.Time
}

// NewLocal returns a cache of size (> 0) entries kept ttl (> 0); now is
// its clock (nil: time.Now).
func NewLocal(size int, ttl time.Duration, now func() time.Time) (*Local, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cache size %d: want > 0 entries", size)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("cache time to live %v: want > 0", ttl)
	}
	if now == nil {
		now = time.Now
	}
	l := &Local{ttl: ttl, now: now}
	c, err := lru.NewWithEvict(size, func(Key, entry) { l.evictions.Add(1) })
	if err != nil {
		return nil, err
	}
	l.lru = c
	return l, nil
}

// Get returns the value of k if it is cached and not expired.
func (l *Local) Get(k Key) ([]byte, bool) {
	e, ok := l.lru.Get(k)
	if ok && !l.now().Before(e.expires) {
		// Not removed: another caller may have just added a fresh value
		// under k. Newer entries push it out, or an Add replaces it.
		l.expired.Add(1)
		ok = false
	}
	if !ok {
		l.misses.Add(1)
		return nil, false
	}
	l.hits.Add(1)
	return e.value, true
}

// Add caches value under k for the cache's time to live, or until ttl if
// shorter (a value from the shared cache keeps its remaining life there);
// ttl <= 0 means the cache's.
func (l *Local) Add(k Key, value []byte, ttl time.Duration) {
	if ttl <= 0 || ttl > l.ttl {
		ttl = l.ttl
	}
	l.lru.Add(k, entry{value: value, expires: l.now().Add(ttl)})
}

// Len returns the entries held, expired ones not yet dropped included.
func (l *Local) Len() int { return l.lru.Len() }

// LocalStats are a Local cache's counts since it was made.
type LocalStats struct {
	Hits, Misses int64
	// Evictions: entries dropped for room; Expired: lookups that found an
	// entry past its time to live (counted as misses too).
	Evictions, Expired int64
}

// Stats returns the cache's counts.
func (l *Local) Stats() LocalStats {
	return LocalStats{Hits: l.hits.Load(), Misses: l.misses.Load(), Evictions: l.evictions.Load(), Expired: l.expired.Load()}
}

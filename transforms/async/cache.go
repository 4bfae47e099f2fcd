package async

// The result cache (WithCache): an element whose lookup was answered before
// takes the answer's outputs without a call, and copies of a lookup being
// called right now wait for that one call. It sits in the pool's Lookup
// (state.Job.Lookup), before each attempt and before the guard: a hit makes
// no call, so it spends no rate, budget or concurrency; a follower gives
// back its slot and place while it waits. Either way the element's task
// finishes with its outputs as if it had called, and is committed exactly
// once through the same path as every other (internal/stream, internal/bounded): a
// cache changes which calls are made, never what is committed or how
// often.
//
// Values are the outputs of one call encoded with the output coder (for
// Enrich, the lookup's answer in the answer's coder: the join runs after
// the cache, per record), so a hit decodes its own copy, and the
// Redis-shared cache holds the same bytes for every worker. A cache that cannot decode what it holds (another
// version of the output type) is a miss.

import (
	"errors"
	"fmt"

	"github.com/asyncbeam/asyncbeam/transforms/cache"
)

// WithCache keeps the results of calls in each worker (and in Redis with
// Cache.Redis) so that an element whose lookup was answered before is not
// called: its outputs are the cached ones, with its own timestamp and
// window, and it is committed exactly once like any other. Copies of a
// lookup being called right now on the worker wait for that call instead
// of calling again (single flight), holding no slot. Only successes are
// cached. Use it for calls whose answer depends only on the lookup, not on
// when it is made (within TTL). Under ParDo and BatchParDo the lookup is the
// whole element (its key and value); under Enrich it is the element's key,
// and the cache holds the lookup's answer, joined into each record.
func WithCache(c Cache) Option {
	return func(s *settings) {
		switch {
		case c.Size <= 0:
			s.errs = append(s.errs, fmt.Errorf("WithCache: Size %d: want > 0 results per worker", c.Size))
		case c.TTL <= 0:
			s.errs = append(s.errs, fmt.Errorf("WithCache: TTL %v: want > 0", c.TTL))
		case c.RedisRequired && c.Redis == "":
			s.errs = append(s.errs, errors.New("WithCache: RedisRequired without Redis; give Cache.Redis, or drop RedisRequired"))
		case c.Redis != "" || c.Prefix != "" || c.PasswordEnv != "" || c.PasswordFile != "" || c.CAFile != "":
			if err := (cache.SharedConfig{Addr: c.Redis, Prefix: c.Prefix, TTL: c.TTL,
				PasswordEnv: c.PasswordEnv, PasswordFile: c.PasswordFile, CAFile: c.CAFile}).Validate(); err != nil {
				s.errs = append(s.errs, fmt.Errorf("WithCache: %w", err))
			}
		}
		cc := c
		s.cache = &cc
	}
}

// WithoutCache makes each record of an Enrich or BatchEnrich its own
// lookup: no answer is kept, and records of one key in flight together are
// looked up apart. Use it where an answer may change from one record to the
// next (stock levels, a live price). ParDo and BatchParDo cache nothing
// without WithCache, so it changes nothing there. It cannot go with
// WithCache.
func WithoutCache() Option {
	return func(s *settings) { s.noCache = true }
}

// resolveCache refuses WithCache with WithoutCache.
func (s *settings) resolveCache() {
	if s.noCache && s.cache != nil {
		s.errs = append(s.errs, errors.New("WithCache and WithoutCache: give one of them"))
	}
}

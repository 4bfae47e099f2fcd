package async

// The result cache (WithCache): an element whose lookup was answered before
// takes the answer's outputs without a call, and copies of a lookup being
// called right now wait for that one call. It sits in the pool's Lookup
// (state.Job.Lookup), before each attempt and before the guard: a hit makes
// no call, so it spends no rate, budget or concurrency; a follower gives
// back its slot and place while it waits. Either way the element's task
// finishes with its outputs as if it had called, and is committed exactly
// once through the same path as every other (commit.go, bundle.go): a
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
	"time"

	"github.com/asyncbeam/asyncbeam/transforms/cache"
)

// Cache configures WithCache.
type Cache struct {
	// Size is how many results a worker keeps (> 0), least recently used
	// out first.
	Size int
	// TTL is how long a result is used after its call (> 0; at least 1 s
	// with Redis).
	TTL time.Duration
	// KeyFn must be nil: ParDo, BatchParDo and Enrich refuse it. It used
	// to cache one element's outputs for every element with the same
	// KeyFn value, which gave records each other's outputs. The cache of
	// ParDo and BatchParDo is keyed by the whole element (key and value);
	// to look something up by part of a record and merge it in, key the
	// records by the lookup key and use Enrich, whose cache is keyed by
	// that key.
	KeyFn any
	// Redis, if not empty, shares results among all workers through a
	// Redis server: host:port, or a URL, redis://[user@]host[:port][/db] or
	// rediss://... for TLS. A Redis that fails or is slow (250 ms), or
	// refuses the password, makes a lookup a miss and a store a no-op, and
	// is left alone for a second: never a failed or wrong element. The
	// metric shared_cache_errors counts the lookups Redis did not answer
	// (failed, or made in that second); the first failure after a success
	// is logged, naming its cause.
	Redis string
	// Prefix, required with Redis, names the cache there: every key starts
	// with it, so that an operator can find the cache's entries
	// (Prefix:lookup:hash). The lookup's identity follows it in each key:
	// the wrapped fn's (Enrich: the lookup's) registered type, method and
	// JSON of its exported fields, or its function name, and the
	// WithFallbacks value, hashed to 16 hex digits. So transforms with
	// different lookups never share entries, even under one Prefix, and
	// the same lookup in two transforms or jobs shares them when they give
	// the same Prefix. Entries written with other output types are misses.
	Prefix string
	// PasswordEnv names the environment variable, or PasswordFile the
	// absolute path of the file, that holds Redis's password on each
	// worker: one of them, or neither for a server without a password. The
	// options travel inside the pipeline graph, so a password in the URL
	// is refused; these name where the worker reads it, for each new
	// connection.
	PasswordEnv, PasswordFile string
	// CAFile, only with rediss://, is the absolute path on each worker of
	// the PEM certificates that sign Redis's, instead of the system's roots.
	CAFile string
	// RedisRequired, only with Redis, makes Redis a requirement of each
	// worker instead of a help: when a DoFn of the transform sets up, the
	// worker makes one round trip to Redis, and if it cannot read the
	// password (PasswordEnv names a variable that is not set, say), Redis
	// refuses it, or Redis does not answer within 250 ms, the DoFn's Setup
	// fails with the cause, and so does the bundle (the runner retries it
	// as it retries any failed bundle). Without it such a worker runs with
	// its own cache only, logging the cause once. Once set up, a worker
	// treats a failing Redis as a miss either way.
	RedisRequired bool
}

// cacheSpec is Cache as the DoFn carries it to workers.
type cacheSpec struct {
	Size          int
	TTL           time.Duration
	Redis, Prefix string
	// Where the worker reads Redis's password and CA (Cache's fields).
	PasswordEnv, PasswordFile, CAFile string
	RedisRequired                     bool
}

// sharedCache is the config of the transform's Redis-shared cache: under
// Cache.Prefix, the namespace of its lookup (cachens.go).
func (c *config) sharedCache() cache.SharedConfig {
	s := c.Cache
	return cache.SharedConfig{Addr: s.Redis, Prefix: s.Prefix, Namespace: c.cacheNamespace(), TTL: s.TTL,
		PasswordEnv: s.PasswordEnv, PasswordFile: s.PasswordFile, CAFile: s.CAFile}
}

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

// inspectCache is WithCache's Cache as the DoFn carries it (KeyFn was
// refused by build).
func inspectCache(c *Cache) *cacheSpec {
	if c == nil {
		return nil
	}
	return &cacheSpec{Size: c.Size, TTL: c.TTL, Redis: c.Redis, Prefix: c.Prefix,
		PasswordEnv: c.PasswordEnv, PasswordFile: c.PasswordFile, CAFile: c.CAFile, RedisRequired: c.RedisRequired}
}

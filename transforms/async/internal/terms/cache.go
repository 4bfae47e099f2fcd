package terms

// The result cache's settings, as ParDo decided them.

import (
	"time"
)

// Cache is documented for users where the front names it (async's types.go).
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

// CacheSpec is Cache as the DoFn carries it to workers.
type CacheSpec struct {
	Size          int
	TTL           time.Duration
	Redis, Prefix string
	// Where the worker reads Redis's password and CA (Cache's fields).
	PasswordEnv, PasswordFile, CAFile string
	RedisRequired                     bool
}

// InspectCache is WithCache's Cache as the DoFn carries it (KeyFn was
// refused by buildParDo).
func InspectCache(c *Cache) *CacheSpec {
	if c == nil {
		return nil
	}
	return &CacheSpec{Size: c.Size, TTL: c.TTL, Redis: c.Redis, Prefix: c.Prefix,
		PasswordEnv: c.PasswordEnv, PasswordFile: c.PasswordFile, CAFile: c.CAFile, RedisRequired: c.RedisRequired}
}

package cache

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asyncbeam/asyncbeam/transforms/internal/redisconn"
)

// SharedConfig is a cache shared by every worker that names the same
// Prefix on the same Redis server. It holds no secret: it may travel in a
// pipeline's graph.
type SharedConfig struct {
	// Addr is the Redis server: host:port, or a URL,
	// redis://[user@]host[:port][/db] or rediss://... for TLS (with the
	// system's roots, or CAFile's). A URL with a password is refused: see
	// PasswordEnv.
	Addr string
	// PasswordEnv names the environment variable, or PasswordFile the
	// absolute path of the file, that holds Redis's password on each
	// worker (one of them, or neither for a server without a password). The
	// worker reads it for each new connection.
	PasswordEnv, PasswordFile string
	// CAFile, only with rediss://, is the absolute path on each worker of
	// the PEM certificates that sign the server's, instead of the system's
	// roots.
	CAFile string
	// Prefix starts every key this cache writes: it names the cache in
	// Redis (for an operator's SCAN or DEL). Caches with the same Prefix
	// and Namespace share entries.
	Prefix string
	// Namespace, if not empty, follows Prefix in every key: what the
	// entries are answers of, so that caches of different lookups under
	// one Prefix never share entries (the async transform gives a short
	// hash of its lookup's identity, NamespaceOf). Keys are
	// Prefix:Namespace:hash, or Prefix:hash without a Namespace.
	Namespace string
	// TTL is how long an entry lives in Redis.
	TTL time.Duration
}

// Validate says what is wrong with c, if anything, and what to change. It
// does not read the password or the CA file: they are the workers'.
func (c SharedConfig) Validate() error {
	switch {
	case c.Addr == "":
		return errors.New("the Redis address is empty; give host:port or a redis:// or rediss:// URL")
	case c.Prefix == "":
		return errors.New("the key prefix is empty; name the lookup this cache holds")
	case c.TTL < time.Second:
		return fmt.Errorf("the time to live %v must be at least 1s", c.TTL)
	}
	return c.conn().Validate()
}

func (c SharedConfig) conn() redisconn.Config {
	return redisconn.Config{Addr: c.Addr, PasswordEnv: c.PasswordEnv, PasswordFile: c.PasswordFile, CAFile: c.CAFile}
}

// sharedTimeout bounds every Redis round trip; downFor is how long the
// cache stays away from Redis after one failed.
const (
	sharedTimeout = 250 * time.Millisecond
	downFor       = time.Second
)

// Shared is a cache kept in Redis: one GET per lookup, one SET with the
// time to live per stored value. Redis that fails or does not answer within
// 250 ms makes the lookup a miss (the caller calls, as without a cache) and
// the store a no-op; the cache then leaves Redis alone for a second, so
// that an outage costs no more than a few timeouts a second. Errors counts
// the lookups Redis did not answer: failed, or made while it is left alone. A refused or unreadable password, or a failed TLS handshake, is
// such a failure. The first failure after a success is logged (slog), one
// line naming the cause (WRONGPASS, NOAUTH, the password's source); the
// next ones only counted. An entry is never half-written: a value is one
// SET.
type Shared struct {
	cfg    SharedConfig
	rdb    *redis.Client
	report redisconn.Reporter

	hits, misses, errs atomic.Int64

	mu        sync.Mutex
	downUntil time.Time
}

// NewShared connects lazily: no call is made, and no password or CA file
// read, until the first Get or Set.
func NewShared(cfg SharedConfig) (*Shared, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("shared cache: %w", err)
	}
	rdb, err := cfg.conn().NewClient(sharedTimeout)
	if err != nil {
		return nil, fmt.Errorf("shared cache: %w", err)
	}
	return &Shared{cfg: cfg, rdb: rdb, report: redisconn.Reporter{What: "shared cache", Config: cfg.conn(),
		Fallback: "lookups are misses and stores are skipped while it fails, counted as errors (metric shared_cache_errors)"}}, nil
}

// key is k's key in Redis.
func (s *Shared) key(k Key) string {
	if s.cfg.Namespace == "" {
		return s.cfg.Prefix + ":" + hex.EncodeToString(k[:])
	}
	return s.cfg.Prefix + ":" + s.cfg.Namespace + ":" + hex.EncodeToString(k[:])
}

// Get returns the value of k if Redis holds it, and how long it has left
// to live there.
func (s *Shared) Get(ctx context.Context, k Key) ([]byte, time.Duration, bool) {
	if s.isDown() {
		s.misses.Add(1)
		s.errs.Add(1)
		return nil, 0, false
	}
	rctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	var get *redis.StringCmd
	var ttl *redis.DurationCmd
	_, err := s.rdb.Pipelined(rctx, func(p redis.Pipeliner) error {
		get = p.Get(rctx, s.key(k))
		ttl = p.PTTL(rctx, s.key(k))
		return nil
	})
	v, getErr := get.Bytes()
	switch {
	case getErr == nil && ttl.Val() > 0:
		s.report.Succeeded()
		s.hits.Add(1)
		return v, ttl.Val(), true
	case errors.Is(getErr, redis.Nil) || (err == nil && ttl.Val() <= 0):
		// Absent, or expiring as we look.
		s.report.Succeeded()
	case ctx.Err() == nil:
		s.errs.Add(1)
		s.failed(cmp.Or(getErr, err))
	}
	s.misses.Add(1)
	return nil, 0, false
}

// Set stores value under k for the time to live.
func (s *Shared) Set(ctx context.Context, k Key, value []byte) {
	if s.isDown() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	switch err := s.rdb.Set(rctx, s.key(k), value, s.cfg.TTL).Err(); {
	case err == nil:
		s.report.Succeeded()
	case ctx.Err() == nil:
		s.failed(err)
	}
}

// Entry is one value to store under its key.
type Entry struct {
	Key   Key
	Value []byte
}

// SetMany stores every entry for the time to live in one round trip (a
// pipeline): a batch's results.
func (s *Shared) SetMany(ctx context.Context, entries []Entry) {
	if len(entries) == 0 || s.isDown() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	_, err := s.rdb.Pipelined(rctx, func(p redis.Pipeliner) error {
		for _, e := range entries {
			p.Set(rctx, s.key(e.Key), e.Value, s.cfg.TTL)
		}
		return nil
	})
	switch {
	case err == nil:
		s.report.Succeeded()
	case ctx.Err() == nil:
		s.failed(err)
	}
}

func (s *Shared) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Before(s.downUntil)
}

// failed reports a failed round trip and keeps the cache away from Redis
// for downFor.
func (s *Shared) failed(err error) {
	s.report.Failed(err)
	s.mu.Lock()
	s.downUntil = time.Now().Add(downFor)
	s.mu.Unlock()
}

// Check makes one round trip to Redis (a PTTL of a key under the Prefix,
// which the cache's own commands need anyway) and returns nil, or an error
// that names the cause as the log line would: a password that cannot be
// read or is refused, a server that does not answer within 250 ms. It is
// for a caller that would rather fail than run without Redis; it counts
// and logs nothing.
func (s *Shared) Check(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	if err := s.rdb.PTTL(rctx, s.key(Key{})).Err(); err != nil {
		return fmt.Errorf("shared cache: %w", s.report.Explain(err))
	}
	s.report.Succeeded()
	return nil
}

// SharedStats are a Shared cache's counts since it was made.
type SharedStats struct {
	Hits, Misses int64
	Errors       int64 // lookups Redis did not answer (each also a miss)
}

// Stats returns the cache's counts.
func (s *Shared) Stats() SharedStats {
	return SharedStats{Hits: s.hits.Load(), Misses: s.misses.Load(), Errors: s.errs.Load()}
}

// Close closes the connection to Redis.
func (s *Shared) Close() error { return s.rdb.Close() }

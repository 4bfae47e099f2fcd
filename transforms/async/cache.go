package async

// The result cache (WithCache): an element whose lookup was answered before
// takes the answer's outputs without a call, and copies of a lookup being
// called right now wait for that one call. It sits in the pool's Lookup
// (state.Job.Lookup), before each attempt and before the guard: a hit makes
// no call, so it spends no rate, budget or concurrency; a follower gives
// back its slot and place while it waits. Either way the element's task
// finishes with its outputs as if it had called, and is committed exactly
// once through the same path as every other (settle.go, bundle.go): a
// cache changes which calls are made, never what is committed or how
// often.
//
// Values are the outputs of one call encoded with the output coder (for
// Enrich, the lookup's answer in the answer's coder: the join runs after
// the cache, per record), so a hit decodes its own copy, and the
// Redis-shared cache holds the same bytes for every worker. A cache that cannot decode what it holds (another
// version of the output type) is a miss.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/cache"
	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
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

// resultCache is a transform's cache in one worker process: one per
// transform, in the registry, so that every DoFn instance and bundle of
// the worker shares it.
type resultCache struct {
	local  *cache.Local
	shared *cache.Shared // nil without Redis
	flight cache.Flight
	// hits: attempts answered from the cache; misses: calls made for a
	// lookup (a follower counts once, as a hit or as a miss when it leads;
	// under BatchParDo, elements sent in a request).
	hits, misses atomic.Int64
	// shape is the cached types' description, in every key (cachetypes.go).
	shape []byte

	published *ledger.Ledger // of cacheStats.vector
}

// cacheStats are the counts published as metrics.
type cacheStats struct{ hits, misses, evictions, sharedErrors int64 }

func (s cacheStats) vector() []int64 { return []int64{s.hits, s.misses, s.evictions, s.sharedErrors} }

// stats returns the cache's counts now.
func (c *resultCache) stats() cacheStats {
	s := cacheStats{hits: c.hits.Load(), misses: c.misses.Load(), evictions: c.local.Stats().Evictions}
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

// resultCache returns this transform's cache in this process, or nil
// without WithCache.
func (f *core) resultCache() (*resultCache, error) {
	if f.Cache == nil {
		return nil, nil
	}
	w, err := f.worker()
	if err != nil {
		return nil, err
	}
	return w.cache, nil
}

// requireRedis makes one round trip to Redis with Cache.RedisRequired, and
// returns its failure with the cause: Setup fails with it.
func (f *core) requireRedis(ctx context.Context) error {
	if f.Cache == nil || !f.Cache.RedisRequired {
		return nil
	}
	rc, err := f.resultCache()
	if err != nil {
		return err
	}
	if err := rc.shared.Check(ctx); err != nil {
		return fmt.Errorf("async: %s: Cache.RedisRequired: %w", f.Name, err)
	}
	return nil
}

// cacheKey is the lookup an element stands for: its key for Enrich (the
// lookup key), else its key and value; and the cached types' shape, so that
// entries of another build of the transform are misses.
func (f *core) cacheKey(el element, shape []byte) cache.Key {
	if f.User.Enrich != nil {
		return cache.KeyOf(shape, []byte(el.eid.Key))
	}
	if f.user != nil && (f.user.shape.takes(paramWindow) || f.user.shape.takes(paramTime)) {
		// A fn that reads its element's window or time answers per window
		// and time, not per key and value.
		ts := binary.AppendVarint(nil, int64(el.ts))
		return cache.KeyOf(shape, []byte(el.eid.Key), el.vb, []byte(el.eid.Window), ts)
	}
	return cache.KeyOf(shape, []byte(el.eid.Key), el.vb)
}

// cachedType is the type of what the cache holds: Enrich's answers, else
// the outputs.
func (f *core) cachedType() reflect.Type {
	if f.User.Enrich != nil {
		return f.User.Enrich.Answer.T
	}
	return f.OutputType.T
}

// cached wires the cache into an element's job: Lookup before each attempt,
// and the leader's call stored and its followers woken after it.
func (f *core) cached(el element, job state.Job) state.Job {
	rc, err := f.resultCache()
	if rc == nil || err != nil {
		if err != nil {
			slog.Error("async: calling without the result cache", "transform", f.Name, "err", err)
		}
		return job
	}
	k := f.cacheKey(el, rc.shape)
	c := &cachedTask{f: f, rc: rc, k: k, el: el}
	job.Lookup = c.lookup
	work := job.Work
	job.Work = func(ctx context.Context, attempt int) ([]any, error) {
		return c.around(ctx, attempt, func() ([]any, error) { return work(ctx, attempt) }, nil)
	}
	if bi, ok := job.Item.(*batchItem); ok {
		bi.after = c.around
	}
	return job
}

// cachedTask is one element's task as the result cache sees it, over the
// task's attempts: lead is the call its current attempt leads, followed the
// one it last waited for. Attempts of a task never overlap, and the pool
// ends a sent-back attempt's lead before the next attempt can start, so
// the fields need no lock.
type cachedTask struct {
	f              *core
	rc             *resultCache
	k              cache.Key
	el             element
	lead, followed *cache.Call
}

// lookup answers an attempt from the cache: the value of the call it
// waited for, the local cache, or Redis; else it leads the call (or waits
// for the leader's).
func (c *cachedTask) lookup(ctx context.Context) (l state.Lookup) {
	f, rc, k := c.f, c.rc, c.k
	defer func() {
		if r := recover(); r != nil {
			// A coder or Redis client that panics: call as if uncached.
			slog.Error("async: the result cache panicked; calling without it", "transform", f.Name, "panic", r)
			if c.lead != nil {
				call := c.lead
				c.lead = nil
				rc.flight.Abandon(k, call)
			}
			l = state.Lookup{}
		}
	}()
	if call := c.followed; call != nil {
		// Woken: the call it waited for ended. Its value, if it has one,
		// is the answer, whatever the local cache holds by now.
		c.followed = nil
		if v, err := call.Result(); err == nil {
			if outs, err := f.decodeOutputs(v); err == nil {
				rc.hits.Add(1)
				return state.Lookup{Hit: true, Outputs: outs}
			}
		}
	}
	if outs, ok := f.cacheGet(rc, k); ok {
		rc.hits.Add(1)
		return state.Lookup{Hit: true, Outputs: outs}
	}
	call, leader := rc.flight.Join(k)
	if !leader {
		c.followed = call
		return state.Lookup{Wait: call.OnDone}
	}
	c.lead = call
	// A call of k may have ended since the look above: its leader adds the
	// value to the local cache before it ends the call, so a look now finds
	// it. Without this second look the element would call again for a
	// value the cache holds: the same lookup sent twice.
	if v, ok := rc.local.Get(k); ok {
		if outs, err := f.decodeOutputs(v); err == nil {
			c.lead = nil
			rc.flight.Finish(k, call, v, nil) // copies that joined it meanwhile take the value too
			rc.hits.Add(1)
			return state.Lookup{Hit: true, Outputs: outs}
		}
	}
	if rc.shared != nil {
		if v, ttl, ok := rc.shared.Get(ctx, k); ok {
			if outs, err := f.decodeOutputs(v); err == nil {
				c.lead = nil
				rc.local.Add(k, v, ttl) // for what is left of its life in Redis
				rc.flight.Finish(k, call, v, nil)
				rc.hits.Add(1)
				return state.Lookup{Hit: true, Outputs: outs}
			}
		}
	}
	return state.Lookup{Abandon: func() {
		c.lead = nil
		rc.flight.Abandon(k, call)
	}}
}

// around takes an attempt's answer (from the element's own call, or from
// its batch request) and caches it when this attempt led the call.
func (c *cachedTask) around(ctx context.Context, attempt int, answer func() ([]any, error), store func(cache.Entry)) (outs []any, err error) {
	f, rc, k := c.f, c.rc, c.k
	call := c.lead
	c.lead = nil
	if call == nil {
		return answer()
	}
	rc.misses.Add(1)
	defer func() {
		if call != nil {
			rc.flight.Abandon(k, call) // a failure, a panic or an interrupted call: the followers look up again
		}
	}()
	outs, err = answer()
	// Only the element's own answer is cached: not a failure, not what a
	// call returned after its task was cancelled (not the element's result:
	// see state.ErrInterrupted), not a fallback's answer when attempts
	// differ in their fallback (WithFallbacks).
	if err != nil || ctx.Err() != nil || (len(f.Fallbacks) > 1 && c.el.done+attempt > 1) {
		return outs, err
	}
	if v, encErr := f.encodeOutputs(outs); encErr == nil {
		rc.local.Add(k, v, 0)
		rc.flight.Finish(k, call, v, nil) // the followers first: Redis can wait
		call = nil
		switch {
		case rc.shared == nil:
		case store != nil:
			store(cache.Entry{Key: k, Value: v}) // with the rest of its request's, in one round trip
		default:
			rc.shared.Set(ctx, k, v)
		}
	}
	return outs, nil
}

// cacheGet returns the decoded outputs cached locally under k.
func (f *core) cacheGet(rc *resultCache, k cache.Key) ([]any, bool) {
	v, ok := rc.local.Get(k)
	if !ok {
		return nil, false
	}
	outs, err := f.decodeOutputs(v)
	return outs, err == nil
}

// encodeOutputs encodes one call's outputs (Enrich: its answer): their
// count, then each output's length and bytes in its coder.
func (f *core) encodeOutputs(outs []any) ([]byte, error) {
	enc := beam.NewElementEncoder(f.cachedType())
	b := binary.AppendUvarint(nil, uint64(len(outs)))
	for _, o := range outs {
		ob, err := encode(enc, o)
		if err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(ob)))
		b = append(b, ob...)
	}
	return b, nil
}

// decodeOutputs is encodeOutputs reversed.
func (f *core) decodeOutputs(b []byte) ([]any, error) {
	dec := beam.NewElementDecoder(f.cachedType())
	r := bytes.NewReader(b)
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(len(b)) {
		return nil, errors.New("async: a cached result is not one this transform wrote")
	}
	outs := make([]any, 0, n)
	for i := uint64(0); i < n; i++ {
		l, err := binary.ReadUvarint(r)
		if err != nil || l > uint64(r.Len()) {
			return nil, errors.New("async: a cached result is cut short")
		}
		ob := make([]byte, l)
		if _, err := io.ReadFull(r, ob); err != nil {
			return nil, err
		}
		o, err := decode(dec, ob)
		if err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
	if r.Len() != 0 {
		return nil, errors.New("async: a cached result is longer than what this transform writes")
	}
	return outs, nil
}

// publishCache adds the cache's counts since the last publication to the
// Beam metrics.
func (f *core) publishCache(ctx context.Context) {
	rc, _ := f.resultCache()
	if rc == nil {
		return
	}
	d, any := f.tickets.take(rc.published, rc.stats().vector())
	if !any {
		return
	}
	m := f.metrics
	for i, counter := range []beam.Counter{m.cacheHits, m.cacheMisses, m.cacheEvictions, m.sharedCacheErrors} {
		counter.Inc(ctx, d[i])
	}
}

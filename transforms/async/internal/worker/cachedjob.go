package worker

// The result cache around one element's job: its key, its lookup, its
// single flight, and the encoding of cached outputs.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
	"github.com/asyncbeam/asyncbeam/transforms/cache"
)

// CacheKey is the lookup an element stands for: its key for Enrich (the
// lookup key), else its key and value; and the cached types' shape, so that
// entries of another build of the transform are misses.
func (f *Core) CacheKey(el Element, shape []byte) cache.Key {
	if f.User.Enrich != nil {
		return cache.KeyOf(shape, []byte(el.ID.Key))
	}
	if f.user != nil && (f.user.Shape.Takes(wrapped.ParamWindow) || f.user.Shape.Takes(wrapped.ParamTime)) {
		// A fn that reads its element's window or time answers per window
		// and time, not per key and value.
		ts := binary.AppendVarint(nil, int64(el.Timestamp))
		return cache.KeyOf(shape, []byte(el.ID.Key), el.ValueBytes, []byte(el.ID.Window), ts)
	}
	return cache.KeyOf(shape, []byte(el.ID.Key), el.ValueBytes)
}

// Cached wires the cache into an element's job: Lookup before each attempt,
// and the leader's call stored and its followers woken after it.
func (f *Core) Cached(el Element, job state.Job) state.Job {
	rc, err := f.ResultCache()
	if rc == nil || err != nil {
		if err != nil {
			slog.Error("async: calling without the result cache", "transform", f.Name, "err", err)
		}
		return job
	}
	k := f.CacheKey(el, rc.Shape)
	c := &cachedTask{f: f, rc: rc, k: k, el: el}
	job.Lookup = c.lookup
	work := job.Work
	job.Work = func(ctx context.Context, attempt int) ([]any, error) {
		return c.around(ctx, attempt, func() ([]any, error) { return work(ctx, attempt) }, nil)
	}
	if bi, ok := job.Item.(*BatchItem); ok {
		bi.After = c.around
	}
	return job
}

// cachedTask is one element's task as the result cache sees it, over the
// task's attempts: lead is the call its current attempt leads, followed the
// one it last waited for. Attempts of a task never overlap, and the pool
// ends a sent-back attempt's lead before the next attempt can start, so
// the fields need no lock.
type cachedTask struct {
	f              *Core
	rc             *resultCache
	k              cache.Key
	el             Element
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
	return c.leadLookup(ctx, call)
}

// leadLookup is lookup for the copy that leads the call of its lookup: it
// looks once more in the local cache, then in Redis, and else calls.
func (c *cachedTask) leadLookup(ctx context.Context, call *cache.Call) state.Lookup {
	f, rc, k := c.f, c.rc, c.k
	c.lead = call
	// A call of k may have ended since the look in lookup: its leader adds the
	// value to the local cache before it ends the call, so a look now finds
	// it. Without this second look the element would call again for a
	// value the cache holds: the same lookup sent twice.
	if v, ok := rc.Local.Get(k); ok {
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
				rc.Local.Add(k, v, ttl) // for what is left of its life in Redis
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
	rc.Misses.Add(1)
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
	if err != nil || ctx.Err() != nil || (len(f.Fallbacks) > 1 && c.el.Done+attempt > 1) {
		return outs, err
	}
	if v, encErr := f.EncodeOutputs(outs); encErr == nil {
		rc.Local.Add(k, v, 0)
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
func (f *Core) cacheGet(rc *resultCache, k cache.Key) ([]any, bool) {
	v, ok := rc.Local.Get(k)
	if !ok {
		return nil, false
	}
	outs, err := f.decodeOutputs(v)
	return outs, err == nil
}

// EncodeOutputs encodes one call's outputs (Enrich: its answer): their
// count, then each output's length and bytes in its coder.
func (f *Core) EncodeOutputs(outs []any) ([]byte, error) {
	enc := beam.NewElementEncoder(f.cachedType())
	b := binary.AppendUvarint(nil, uint64(len(outs)))
	for _, o := range outs {
		ob, err := wrapped.Encode(enc, o)
		if err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(ob)))
		b = append(b, ob...)
	}
	return b, nil
}

// decodeOutputs is EncodeOutputs reversed.
func (f *Core) decodeOutputs(b []byte) ([]any, error) {
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
		o, err := wrapped.Decode(dec, ob)
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

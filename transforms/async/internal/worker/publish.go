package worker

// Publishing what happens off the bundle's goroutines (events counted on
// the pool's goroutines, the guard's, the cache's and the batches' counts,
// listener panics) as Beam metrics of the bundles that commit them. Each
// source is a per-process object with a ledger (transforms/internal/ledger):
// a bundle takes the counts no other bundle holds (tickets.go), and they
// become final when its FinishBundle returns without error; a bundle that
// fails, or whose DoFn instance is dropped unfinished, gives them back to a
// later bundle. A count is lost only when the runner fails a bundle after its
// FinishBundle returned (another fused step failing later); the batch_size
// distribution's samples are lost with a failed bundle.

import (
	"context"
	"log/slog"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
)

// Publish adds what happened off the bundle's goroutines since the last
// callback to the Beam metrics, with a bundle's context.
func (f *Core) Publish(ctx context.Context, pool *state.Pool) {
	f.publishSharedSometimes(ctx, pool)
	if len(f.Listeners) == 0 {
		return
	}
	if h := f.Events(); h != nil {
		if d, any := f.tickets.Take(h.Published, []int64{h.Panics.Load()}); any {
			f.metrics.ListenerPanics.Inc(ctx, d[0])
		}
	}
}

// publishSharedSometimes publishes the counts kept by the transform's
// per-process objects (the event counts, the guard, the result cache, the
// batch counts) at most ten times a second per instance, since publish
// runs for every element and each looks its object up; and whenever no
// call is unfinished, so that the last counts of a pipeline are published
// by its last callback (each does nothing when no count changed).
func (f *Core) publishSharedSometimes(ctx context.Context, pool *state.Pool) {
	now := f.clock.Now()
	if now.Sub(f.lastGuardPublish) < 100*time.Millisecond && pool.Unfinished() > 0 {
		return
	}
	f.lastGuardPublish = now
	f.publishEvents(ctx)
	f.publishGuard(ctx, pool)
	if f.Cache != nil {
		f.publishCache(ctx)
	}
	if f.Batch != nil {
		f.publishBatches(ctx)
	}
}

// publishEvents publishes the events counted off the bundle's goroutines.
// It looks the counts up in the registry, which keeps them there while the
// transform publishes, and points the instance at them should they have
// been dropped and made anew meanwhile (see worker).
func (f *Core) publishEvents(ctx context.Context) {
	c := f.worker().counts
	c.mu.Lock()
	total := c.total.vector()
	c.mu.Unlock()
	d, any := f.tickets.Take(c.ledger, total)
	if !any {
		return
	}
	m := f.metrics
	for i, counter := range []interface {
		Inc(context.Context, int64)
	}{m.Started, m.Succeeded, m.Retried, m.Rescheduled, m.ProgressReports, m.Cancelled} {
		counter.Inc(ctx, d[i])
	}
}

// publishGuard adds the guard's counts since the last publication to the
// Beam metrics, and sets the concurrency limit gauge.
func (f *Core) publishGuard(ctx context.Context, pool *state.Pool) {
	g, ok := pool.Gate().(*Guarded)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.Stats()
	d, any := f.tickets.Take(g.published, statsVector(s))
	if !any && g.limitPublished {
		return // nothing new: no metric updates per element
	}
	g.limitPublished = true
	if !g.warned {
		if msg := ParallelismWarning(f.Name, f.Parallelism, f.Protect.AdaptiveMax > 0, s); msg != "" {
			g.warned = true
			slog.Warn(msg)
		}
	}
	m := f.metrics
	for i, counter := range []beam.Counter{m.Calls, m.Overloaded, m.Throttled, m.ThrottledMs, m.BudgetWaits, m.SharedErrors} {
		counter.Inc(ctx, d[i])
	}
	limit := s.Limit
	if limit == 0 {
		limit = f.Parallelism
	}
	m.Limit.Set(ctx, int64(limit))
}

// publishCache adds the cache's counts since the last publication to the
// Beam metrics.
func (f *Core) publishCache(ctx context.Context) {
	rc, _ := f.ResultCache()
	if rc == nil {
		return
	}
	d, any := f.tickets.Take(rc.published, rc.stats().vector())
	if !any {
		return
	}
	m := f.metrics
	for i, counter := range []beam.Counter{m.CacheHits, m.CacheMisses, m.CacheEvictions, m.SharedCacheErrors} {
		counter.Inc(ctx, d[i])
	}
}

// publishBatches publishes the requests made since the last callback.
func (f *Core) publishBatches(ctx context.Context) {
	b := f.batchStats()
	counts, sizes := b.drain()
	for _, n := range sizes {
		f.metrics.BatchSize.Update(ctx, n)
	}
	if d, any := f.tickets.Take(b.published, counts); any {
		f.metrics.Requests.Inc(ctx, d[0])
		f.metrics.RequestItems.Inc(ctx, d[1])
	}
}

package async

import (
	"context"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
)

// Metric names, in the namespace of the transform's scope (for example
// "root/async.ParDo", or the user's scope around it).
const (
	MetricAccepted     = "accepted"        // elements ProcessElement took
	MetricStarted      = "started"         // calls started (first attempts and restarts)
	MetricFinished     = "finished"        // elements whose calls ended, with outputs or a final failure
	MetricCommitted    = "committed"       // elements whose outputs were committed
	MetricRescheduled  = "rescheduled"     // elements in bag state unknown to the worker, started by a callback
	MetricCancelled    = "cancelled"       // local work dropped because its element left bag state
	MetricEvicted      = "evicted"         // local work of keys gone from this worker, dropped; each is a call made again elsewhere
	MetricDeduplicated = "deduplicated"    // copies of a pending element, run and emitted once
	MetricRetried      = "retried"         // failed attempts that were retried
	MetricFailed       = "failed"          // elements that failed for good
	MetricInFlight     = "in_flight"       // gauge: local tasks of the transform in the worker
	MetricQueued       = "queued"          // gauge: elements of the last committed key waiting in bag state
	MetricLatency      = "call_latency_ms" // distribution: duration of the last attempt of each finished call
	MetricCommitDelay  = "commit_delay_ms" // distribution: from a call finishing to its output's commit
	// MetricProgress is a distribution of the latest progress (per mille)
	// of running calls that report it, sampled by their key's callbacks.
	MetricProgress        = "call_progress_permille"
	MetricProgressReports = "progress_reports" // ReportProgress calls of finished elements
	MetricListenerPanics  = "listener_panics"  // panics of the event listener, contained
	// Protecting the service (protect.go), counted by the worker's guard and
	// published at callbacks.
	MetricCalls            = "calls"              // attempts that passed the guard and called the fn
	MetricOverloaded       = "overloaded"         // attempts answered with overload (Overloaded)
	MetricThrottled        = "throttled"          // attempts that waited over 1 ms in their slot for the throttle or the rate
	MetricThrottledMs      = "throttled_ms"       // the time they waited, in all
	MetricBudgetWaits      = "retry_budget_waits" // retries of overloaded attempts sent back for want of budget
	MetricSharedRateErrors = "shared_rate_errors" // calls that found the shared rate's Redis unreachable
	MetricConcurrencyLimit = "concurrency_limit"  // gauge: the adaptive limit, or the fixed parallelism
	// The result cache (cache.go, WithCache), published at callbacks.
	MetricCacheHits         = "cache_hits"          // attempts answered from the cache, without a call
	MetricCacheMisses       = "cache_misses"        // calls made (BatchParDo: elements sent) for a lookup the cache could not answer
	MetricCacheEvictions    = "cache_evictions"     // results pushed out of a worker's cache for room
	MetricSharedCacheErrors = "shared_cache_errors" // Redis round trips of the shared cache that failed
	// BatchParDo's requests (batch.go), published at callbacks.
	MetricRequests     = "requests"      // calls of ProcessBatch
	MetricRequestItems = "request_items" // elements sent in them (a retried element counts again)
	MetricBatchSize    = "batch_size"    // distribution: elements per request
)

// metrics are the transform's Beam metrics. Beam ignores updates made with a
// context that is not a bundle's, so unit tests may pass any context.
type metrics struct {
	accepted, started, finished, committed, rescheduled, cancelled, evicted, deduplicated, retried, failed beam.Counter
	progressReports, listenerPanics                                                                        beam.Counter
	calls, overloaded, throttled, throttledMs, budgetWaits, sharedErrors                                   beam.Counter
	cacheHits, cacheMisses, cacheEvictions, sharedCacheErrors                                              beam.Counter
	requests, requestItems                                                                                 beam.Counter
	inFlight, queued, limit                                                                                beam.Gauge
	latency, commitDelay, progress, batchSize                                                              beam.Distribution
}

func newMetrics(ns string) *metrics {
	if ns == "" {
		ns = "async"
	}
	c := func(name string) beam.Counter { return beam.NewCounter(ns, name) }
	return &metrics{
		accepted: c(MetricAccepted), started: c(MetricStarted), finished: c(MetricFinished),
		committed: c(MetricCommitted), rescheduled: c(MetricRescheduled), cancelled: c(MetricCancelled), evicted: c(MetricEvicted),
		deduplicated: c(MetricDeduplicated), retried: c(MetricRetried), failed: c(MetricFailed),
		inFlight: beam.NewGauge(ns, MetricInFlight), queued: beam.NewGauge(ns, MetricQueued),
		latency: beam.NewDistribution(ns, MetricLatency), commitDelay: beam.NewDistribution(ns, MetricCommitDelay),
		progress: beam.NewDistribution(ns, MetricProgress), progressReports: c(MetricProgressReports), listenerPanics: c(MetricListenerPanics),
		calls: c(MetricCalls), overloaded: c(MetricOverloaded), throttled: c(MetricThrottled), throttledMs: c(MetricThrottledMs),
		budgetWaits: c(MetricBudgetWaits), sharedErrors: c(MetricSharedRateErrors), limit: beam.NewGauge(ns, MetricConcurrencyLimit),
		cacheHits: c(MetricCacheHits), cacheMisses: c(MetricCacheMisses), cacheEvictions: c(MetricCacheEvictions),
		sharedCacheErrors: c(MetricSharedCacheErrors),
		requests:          c(MetricRequests), requestItems: c(MetricRequestItems), batchSize: beam.NewDistribution(ns, MetricBatchSize),
	}
}

// observeFinished records a finished task: its count, its last attempt's
// latency, the retries it made locally, and its delay until commit.
func (m *metrics) observeFinished(ctx context.Context, t *state.Task, now time.Time) {
	m.finished.Inc(ctx, 1)
	if n := t.Attempts(); n > 1 {
		m.retried.Inc(ctx, int64(n-1))
	}
	if _, reports := t.Progress(); reports > 0 {
		m.progressReports.Inc(ctx, int64(reports))
	}
	started, finished := t.StartedAt(), t.FinishedAt()
	if !started.IsZero() && !finished.IsZero() {
		m.latency.Update(ctx, finished.Sub(started).Milliseconds())
		m.commitDelay.Update(ctx, max(now.Sub(finished), 0).Milliseconds())
	}
}

// observeRunning samples the progress of a key's running calls.
func (m *metrics) observeRunning(ctx context.Context, t *state.Task) {
	if fraction, reports := t.Progress(); reports > 0 && t.Status() == state.Running {
		m.progress.Update(ctx, int64(fraction*1000))
	}
}

// publish adds what happened off the bundle's goroutines since the last
// callback (listener panics) to the Beam metrics, with a bundle's context.
func (f *core) publish(ctx context.Context, pool *state.Pool) {
	f.publishSharedSometimes(ctx, pool)
	if f.Listener == nil {
		return
	}
	if h := f.events(); h != nil {
		total := h.panics.Load()
		if old := h.published.Swap(total); total > old {
			f.metrics.listenerPanics.Inc(ctx, total-old)
		}
	}
}

// publishSharedSometimes publishes the counts kept by the transform's
// per-process objects (the guard, the result cache, the batch counts) at
// most ten times a second per instance, since publish runs for every
// element and each looks its object up; and whenever no call is
// unfinished, so that the last counts of a pipeline are published by its
// last callback (each does nothing when no count changed).
func (f *core) publishSharedSometimes(ctx context.Context, pool *state.Pool) {
	now := f.clock.Now()
	if now.Sub(f.lastGuardPublish) < 100*time.Millisecond && pool.Unfinished() > 0 {
		return
	}
	f.lastGuardPublish = now
	f.publishGuard(ctx, pool)
	if f.Cache != nil {
		f.publishCache(ctx)
	}
	if f.Batch != nil {
		f.publishBatches(ctx)
	}
}

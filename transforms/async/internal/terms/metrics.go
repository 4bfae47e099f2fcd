package terms

// The transform's metrics: their names, and the counters and distributions
// one DoFn instance updates.

import (
	"context"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
)

// Metric names: the table of what each counts is where the front names
// them (async's types.go).
const (
	MetricAccepted     = "accepted"
	MetricStarted      = "started"
	MetricSucceeded    = "succeeded"
	MetricFinished     = "finished"
	MetricCommitted    = "committed"
	MetricRescheduled  = "rescheduled"
	MetricCancelled    = "cancelled"
	MetricEvicted      = "evicted"
	MetricDeduplicated = "deduplicated"
	MetricRetried      = "retried"
	MetricFailed       = "failed"
	MetricDrained      = "drained"

	MetricInFlight          = "in_flight"
	MetricQueued            = "queued"
	MetricLatency           = "call_latency_ms"
	MetricCommitDelay       = "commit_delay_ms"
	MetricProgress          = "call_progress_permille"
	MetricProgressReports   = "progress_reports"
	MetricListenerPanics    = "listener_panics"
	MetricCalls             = "calls"
	MetricOverloaded        = "overloaded"
	MetricThrottled         = "throttled"
	MetricThrottledMs       = "throttled_ms"
	MetricBudgetWaits       = "retry_budget_waits"
	MetricSharedRateErrors  = "shared_rate_errors"
	MetricConcurrencyLimit  = "concurrency_limit"
	MetricCacheHits         = "cache_hits"
	MetricCacheMisses       = "cache_misses"
	MetricCacheEvictions    = "cache_evictions"
	MetricSharedCacheErrors = "shared_cache_errors"
	MetricRequests          = "requests"
	MetricRequestItems      = "request_items"
	MetricBatchSize         = "batch_size"
)

// Metrics are the transform's Beam metrics. Beam ignores updates made with a
// context that is not a bundle's, so unit tests may pass any context.
type Metrics struct {
	Accepted, Started, Succeeded, finished, committed, Rescheduled, Cancelled, Evicted, Deduplicated, Retried, failed beam.Counter
	ProgressReports, ListenerPanics, Drained                                                                          beam.Counter
	Calls, Overloaded, Throttled, ThrottledMs, BudgetWaits, SharedErrors                                              beam.Counter
	CacheHits, CacheMisses, CacheEvictions, SharedCacheErrors                                                         beam.Counter
	Requests, RequestItems                                                                                            beam.Counter
	InFlight, Queued, Limit                                                                                           beam.Gauge
	latency, commitDelay, progress, BatchSize                                                                         beam.Distribution
}

func NewMetrics(ns string) *Metrics {
	if ns == "" {
		ns = "async"
	}
	c := func(name string) beam.Counter { return beam.NewCounter(ns, name) }
	return &Metrics{
		Accepted: c(MetricAccepted), Started: c(MetricStarted), Succeeded: c(MetricSucceeded), finished: c(MetricFinished),
		committed: c(MetricCommitted), Rescheduled: c(MetricRescheduled), Cancelled: c(MetricCancelled), Evicted: c(MetricEvicted),
		Deduplicated: c(MetricDeduplicated), Retried: c(MetricRetried), failed: c(MetricFailed),
		InFlight: beam.NewGauge(ns, MetricInFlight), Queued: beam.NewGauge(ns, MetricQueued),
		latency: beam.NewDistribution(ns, MetricLatency), commitDelay: beam.NewDistribution(ns, MetricCommitDelay),
		progress: beam.NewDistribution(ns, MetricProgress), ProgressReports: c(MetricProgressReports), ListenerPanics: c(MetricListenerPanics), Drained: c(MetricDrained),
		Calls: c(MetricCalls), Overloaded: c(MetricOverloaded), Throttled: c(MetricThrottled), ThrottledMs: c(MetricThrottledMs),
		BudgetWaits: c(MetricBudgetWaits), SharedErrors: c(MetricSharedRateErrors), Limit: beam.NewGauge(ns, MetricConcurrencyLimit),
		CacheHits: c(MetricCacheHits), CacheMisses: c(MetricCacheMisses), CacheEvictions: c(MetricCacheEvictions),
		SharedCacheErrors: c(MetricSharedCacheErrors),
		Requests:          c(MetricRequests), RequestItems: c(MetricRequestItems), BatchSize: beam.NewDistribution(ns, MetricBatchSize),
	}
}

// observeFinished records a finished task's last attempt's latency. What
// it counts is counted where its events are sent (countCommitted,
// countFailed, eventCounts).
func (m *Metrics) ObserveFinished(ctx context.Context, t *state.Task) {
	started, finished := t.StartedAt(), t.FinishedAt()
	if !started.IsZero() && !finished.IsZero() {
		m.latency.Update(ctx, finished.Sub(started).Milliseconds())
	}
}

// countCommitted counts an element committed (EventCommitted), and
// countFailed one failed for good (EventFailed): either is finished. A
// committed element's commit delay is from finished, when its call (or
// the cache's answer) ended, to now.
func (m *Metrics) CountCommitted(ctx context.Context, finished, now time.Time) {
	m.committed.Inc(ctx, 1)
	m.finished.Inc(ctx, 1)
	if finished.IsZero() {
		finished = now
	}
	m.commitDelay.Update(ctx, max(now.Sub(finished), 0).Milliseconds())
}

func (m *Metrics) CountFailed(ctx context.Context) {
	m.failed.Inc(ctx, 1)
	m.finished.Inc(ctx, 1)
}

// observeRunning samples the progress of a key's running calls.
func (m *Metrics) ObserveRunning(ctx context.Context, t *state.Task) {
	if fraction, reports := t.Progress(); reports > 0 && t.Status() == state.Running {
		m.progress.Update(ctx, int64(fraction*1000))
	}
}

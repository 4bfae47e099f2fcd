package terms

import (
	"context"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
)

// Metric names, in the namespace of the transform's scope (for example
// "root/async.ParDo", or the user's scope around it). Each counter of an
// element's transitions counts the events of that transition (see Listener),
// with or without a listener, on bounded and unbounded input alike:
//
//	metric            counts                                        equals the count of
//	accepted          elements ProcessElement took                  EventAccepted
//	started           attempts that called the fn (no cache hits)   EventStarted
//	succeeded         attempts whose call returned no error         EventSucceeded
//	retried           failed attempts that will be retried          EventRetrying
//	failed            elements that failed for good                 EventFailed
//	committed         elements whose outputs were emitted           EventCommitted
//	finished          elements decided: committed + failed          EventCommitted + EventFailed
//	rescheduled       elements started again after losing work      EventRescheduled
//	cancelled         work dropped: element gone, bundle failed     EventCancelled, evictions aside
//	evicted           work of an owner gone from the worker         EventCancelled of evictions
//	deduplicated      copies of a pending element (WithIDFn)        EventDeduplicated
//	drained           elements the end-of-input drain committed     EventAccepted once more, but of a finished call
//	progress_reports  ReportProgress calls                          EventProgress
//	calls             calls of the fn the guard let through         EventStarted (batches: requests)
//	cache_hits        attempts answered from the cache, not called  none (no EventStarted)
//	cache_misses      attempts called for a lookup not cached       EventStarted, under WithCache
//	requests          calls of ProcessBatch or LookupBatch          calls
//	request_items     elements sent in them                         EventStarted
//	throttled         attempts that waited over 1 ms for the guard  none
//
// rescheduled is zero in a run where no work is lost: on unbounded input it
// counts elements pending in bag state, with no retry due, that the worker
// does not run (after a restart, a moved key, an eviction, a failed
// callback), and on bounded input elements evicted from their bundle; a due
// retry counts in retried, a queued element's first start in none. The
// distribution commit_delay_ms has one sample per committed element (its
// count is committed's): from the end of the element's last call, or of
// the cache's answer, to its commit.
//
// Every call ends one way, and every committed element was called or hit:
// started = succeeded + retried + failed, and committed = succeeded +
// cache_hits, in a run where no element fails without a call or after it
// (Enrich's join, a task cancelled before its call) and no call is cut short (an
// eviction, a restart). Counters are Beam's: what a failed bundle counted
// is dropped from the committed values, while its events were sent. Counts
// made off the bundle's goroutines (started, succeeded, retried,
// rescheduled, progress_reports, the guard's, the cache's, the requests),
// and the work a failing bundle drops (cancelled), are published by a later
// callback's bundle, and again by another if that one fails (publish.go).
// They become final when that bundle's FinishBundle returns: if the runner
// then fails the bundle anyway (a later step fused into its stage fails),
// Beam drops its counters and those counts are lost, so these counters can
// read below their events' counts.
const (
	MetricAccepted     = "accepted"     // elements ProcessElement took: EventAccepted
	MetricStarted      = "started"      // attempts that called the wrapped fn: EventStarted
	MetricSucceeded    = "succeeded"    // attempts whose call returned without error: EventSucceeded
	MetricFinished     = "finished"     // elements committed or failed for good
	MetricCommitted    = "committed"    // elements whose outputs were committed: EventCommitted
	MetricRescheduled  = "rescheduled"  // elements whose work this worker lost or never had, started again: EventRescheduled
	MetricCancelled    = "cancelled"    // local work dropped because its element left bag state, or its bundle failed: EventCancelled
	MetricEvicted      = "evicted"      // local work of keys gone from this worker, dropped (EventCancelled); each is a call made again elsewhere
	MetricDeduplicated = "deduplicated" // copies of a pending element, run and emitted once: EventDeduplicated
	MetricRetried      = "retried"      // failed attempts that will be retried: EventRetrying
	MetricFailed       = "failed"       // elements that failed for good: EventFailed
	// MetricDrained counts the elements of unbounded input that the runner
	// ended with uncommitted (no timer of their key fired again) and that
	// the end-of-input drain committed (escrow.go): each is accepted once
	// more and run again, unless its call had finished on the worker.
	MetricDrained = "drained"

	MetricInFlight    = "in_flight"       // gauge: local tasks of the transform in the worker
	MetricQueued      = "queued"          // gauge: elements of the last committed key waiting in bag state
	MetricLatency     = "call_latency_ms" // distribution: duration of the last attempt of each finished call
	MetricCommitDelay = "commit_delay_ms" // distribution: from a call finishing to its output's commit, once per committed element
	// MetricProgress is a distribution of the latest progress (per mille)
	// of running calls that report it, sampled by their key's callbacks.
	MetricProgress        = "call_progress_permille"
	MetricProgressReports = "progress_reports" // ReportProgress calls: EventProgress
	MetricListenerPanics  = "listener_panics"  // panics of the event listener, contained
	// Protecting the service (protect.go), counted by the worker's guard and
	// published at callbacks.
	MetricCalls            = "calls"              // calls of the fn the guard let through: attempts (BatchParDo, BatchEnrich: requests)
	MetricOverloaded       = "overloaded"         // attempts answered with overload (Overloaded)
	MetricThrottled        = "throttled"          // attempts that waited over 1 ms in their slot for the throttle or the rate
	MetricThrottledMs      = "throttled_ms"       // their waits summed over attempts (N attempts waiting one second at once add N×1000): throttled_ms/throttled is the mean wait
	MetricBudgetWaits      = "retry_budget_waits" // retries of overloaded attempts sent back for want of budget
	MetricSharedRateErrors = "shared_rate_errors" // calls that found the shared rate's Redis unreachable
	MetricConcurrencyLimit = "concurrency_limit"  // gauge: the adaptive limit, or the fixed parallelism
	// The result cache (cache.go, WithCache), published at callbacks.
	MetricCacheHits         = "cache_hits"          // attempts answered from the cache, without a call (nor EventStarted)
	MetricCacheMisses       = "cache_misses"        // attempts that called the fn (BatchParDo, BatchEnrich: elements sent) for a lookup the cache could not answer
	MetricCacheEvictions    = "cache_evictions"     // results pushed out of a worker's cache for room
	MetricSharedCacheErrors = "shared_cache_errors" // lookups of the shared cache that Redis did not answer (failed, or made while it is left alone after a failure): misses
	// BatchParDo's requests (batch.go), published at callbacks.
	MetricRequests     = "requests"      // calls of ProcessBatch (BatchParDo) or LookupBatch (BatchEnrich)
	MetricRequestItems = "request_items" // elements sent in them (a retried element counts again): EventStarted
	MetricBatchSize    = "batch_size"    // distribution: elements per request
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

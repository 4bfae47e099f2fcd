package async

// The types and constants that outputs, events, metrics and options speak
// in. The machinery declares them (internal/terms); these are the same types
// under the names users know.

import "github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"

// Cache configures WithCache.
type Cache = terms.Cache

// EventType names a transition in an element's life.
type EventType = terms.EventType

// The element events a Listener receives.
const (
	// EventAccepted: ProcessElement took the element into bag state.
	EventAccepted = terms.EventAccepted
	// EventStarted: an attempt of the call began (Attempt is its number).
	// Before it, a listener (this worker's, or the one's that last held the
	// element) received the event that says where the attempt comes from:
	// EventAccepted before the element's first start (at once, or once a
	// queued element finds room), EventRetrying before a retry,
	// EventRescheduled before a start again of lost work.
	EventStarted = terms.EventStarted
	// EventSucceeded: an attempt returned without error.
	EventSucceeded = terms.EventSucceeded
	// EventRetrying: a failed attempt will be retried after Delay (Kind and
	// Error describe the failure).
	EventRetrying = terms.EventRetrying
	// EventFailed: the element failed for good (Kind and Error say why).
	EventFailed = terms.EventFailed
	// EventCommitted: the element's outputs were emitted and it left bag
	// state, in one callback.
	EventCommitted = terms.EventCommitted
	// EventCancelled: local work was dropped because the element left bag
	// state elsewhere, its stale result was evicted, or its bundle failed.
	EventCancelled = terms.EventCancelled
	// EventRescheduled: an element whose work this worker lost or never
	// had is started again, just before its EventStarted. On unbounded
	// input: an element pending in bag state, with no retry due, that this
	// worker does not run (a restart, a moved key, an eviction, a failed
	// callback's work). On bounded input: an element evicted from its
	// bundle. Not a due retry (EventRetrying said it), nor a queued
	// element's first start; nor a retry whose attempt was lost after it
	// started, which bag state does not record: it starts again as a retry.
	EventRescheduled = terms.EventRescheduled
	// EventDeduplicated: a copy of a pending element was dropped from bag
	// state.
	EventDeduplicated = terms.EventDeduplicated
	// EventProgress: the running call reported progress (see ReportProgress).
	EventProgress = terms.EventProgress
	// EventLimitChanged: the adaptive concurrency limit of the worker moved
	// (WithAdaptiveParallelism); Limit is the new one. It is about no
	// element: Key is nil and ElementID empty.
	EventLimitChanged = terms.EventLimitChanged
)

// Event is one transition of one element.
type Event = terms.Event

// Listener receives the element events of a transform, in the worker process
// that runs it; the transform's metrics count the same events (see the
// table above MetricAccepted). OnEvent is called on the goroutine where the
// transition happens (a bundle's, or a call's in the pool), concurrently
// for different elements, so it must be safe for concurrent use, and quick:
// it runs inside the transform's work. A panic in OnEvent is recovered,
// logged once and counted in the metric MetricListenerPanics; the element
// carries on.
//
// Give a listener with WithListener as a pointer to a named struct type
// registered with beam.RegisterType: like the wrapped DoFn it is shipped to
// workers as the JSON of its exported fields and rebuilt there, once per
// transform per worker process, shared by all the transform's DoFn
// instances so that it sees each element's events in order.
//
// Optional methods: Validate() error is called at pipeline construction
// (a bad configuration fails there); Setup() error is called once on the
// worker before the first event (an error fails the DoFn's Setup); Close()
// error is called when the worker's registry is reset (see state.Reset).
type Listener = terms.Listener

// Failure is the record of an element that failed for good, as written to the
// failure output of ParDoWithFailures.
type Failure = terms.Failure

// FailureError is the error the wrapped DoFn's Revert method receives: the
// element's committed failure record. errors.As gives its Kind, Attempts and
// the rest.
type FailureError = terms.FailureError

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
// callback's bundle, and again by another if that one fails (internal/worker/publish.go).
// They become final when that bundle's FinishBundle returns: if the runner
// then fails the bundle anyway (a later step fused into its stage fails),
// Beam drops its counters and those counts are lost, so these counters can
// read below their events' counts.
const (
	MetricAccepted     = terms.MetricAccepted     // elements ProcessElement took: EventAccepted
	MetricStarted      = terms.MetricStarted      // attempts that called the wrapped fn: EventStarted
	MetricSucceeded    = terms.MetricSucceeded    // attempts whose call returned without error: EventSucceeded
	MetricFinished     = terms.MetricFinished     // elements committed or failed for good
	MetricCommitted    = terms.MetricCommitted    // elements whose outputs were committed: EventCommitted
	MetricRescheduled  = terms.MetricRescheduled  // elements whose work this worker lost or never had, started again: EventRescheduled
	MetricCancelled    = terms.MetricCancelled    // local work dropped because its element left bag state, or its bundle failed: EventCancelled
	MetricEvicted      = terms.MetricEvicted      // local work of keys gone from this worker, dropped (EventCancelled); each is a call made again elsewhere
	MetricDeduplicated = terms.MetricDeduplicated // copies of a pending element, run and emitted once: EventDeduplicated
	MetricRetried      = terms.MetricRetried      // failed attempts that will be retried: EventRetrying
	MetricFailed       = terms.MetricFailed       // elements that failed for good: EventFailed
	// MetricDrained counts the elements of unbounded input that the runner
	// ended with uncommitted (no timer of their key fired again) and that
	// the end-of-input drain committed (internal/drain): each is accepted once
	// more and run again, unless its call had finished on the worker.
	MetricDrained     = terms.MetricDrained
	MetricInFlight    = terms.MetricInFlight    // gauge: local tasks of the transform in the worker
	MetricQueued      = terms.MetricQueued      // gauge: elements of the last committed key waiting in bag state
	MetricLatency     = terms.MetricLatency     // distribution: duration of the last attempt of each finished call
	MetricCommitDelay = terms.MetricCommitDelay // distribution: from a call finishing to its output's commit, once per committed element
	// MetricProgress is a distribution of the latest progress (per mille)
	// of running calls that report it, sampled by their key's callbacks.
	MetricProgress        = terms.MetricProgress
	MetricProgressReports = terms.MetricProgressReports // ReportProgress calls: EventProgress
	MetricListenerPanics  = terms.MetricListenerPanics  // panics of the event listener, contained
	// Protecting the service (protect.go), counted by the worker's guard and
	// published at callbacks.
	MetricCalls            = terms.MetricCalls            // calls of the fn the guard let through: attempts (BatchParDo, BatchEnrich: requests)
	MetricOverloaded       = terms.MetricOverloaded       // attempts answered with overload (Overloaded)
	MetricThrottled        = terms.MetricThrottled        // attempts that waited over 1 ms in their slot for the throttle or the rate
	MetricThrottledMs      = terms.MetricThrottledMs      // their waits summed over attempts (N attempts waiting one second at once add N×1000): throttled_ms/throttled is the mean wait
	MetricBudgetWaits      = terms.MetricBudgetWaits      // retries of overloaded attempts sent back for want of budget
	MetricSharedRateErrors = terms.MetricSharedRateErrors // calls that found the shared rate's Redis unreachable
	MetricConcurrencyLimit = terms.MetricConcurrencyLimit // gauge: the adaptive limit, or the fixed parallelism
	// The result cache (cache.go, WithCache), published at callbacks.
	MetricCacheHits         = terms.MetricCacheHits         // attempts answered from the cache, without a call (nor EventStarted)
	MetricCacheMisses       = terms.MetricCacheMisses       // attempts that called the fn (BatchParDo, BatchEnrich: elements sent) for a lookup the cache could not answer
	MetricCacheEvictions    = terms.MetricCacheEvictions    // results pushed out of a worker's cache for room
	MetricSharedCacheErrors = terms.MetricSharedCacheErrors // lookups of the shared cache that Redis did not answer (failed, or made while it is left alone after a failure): misses
	// BatchParDo's requests (batch.go), published at callbacks.
	MetricRequests     = terms.MetricRequests     // calls of ProcessBatch (BatchParDo) or LookupBatch (BatchEnrich)
	MetricRequestItems = terms.MetricRequestItems // elements sent in them (a retried element counts again): EventStarted
	MetricBatchSize    = terms.MetricBatchSize    // distribution: elements per request
)

// KindOverloaded is the failure kind of an element whose last attempt was
// answered with overload (see Overloaded).
const KindOverloaded = terms.KindOverloaded

// DefaultOverloadThreshold is WithOverloadThreshold's default: a worker
// paces its attempts once the service refuses more than a fifth of them.
const DefaultOverloadThreshold = terms.DefaultOverloadThreshold

// Failure kinds, as they appear in Failure.Kind.
const (
	KindError     = terms.KindError     // the fn returned an error
	KindTimeout   = terms.KindTimeout   // the attempt outlived WithCallTimeout
	KindPanic     = terms.KindPanic     // the fn panicked; the error carries the stack
	KindPermanent = terms.KindPermanent // the fn returned Permanent(err): not retried
	// KindWindow: the element's window cannot be given back to its outputs
	// from its timestamp (a session a GroupByKey merged, or a timestamp a
	// DoFn moved out of its window); it was not called (Attempts 0), and
	// Revert does not run for it.
	KindWindow = terms.KindWindow
)

// Backoff is the delay before a retry: Initial for the first retry, multiplied
// by Multiplier for each further one, capped at Max, and shortened by up to
// Jitter (a share, 0 to 1) of itself. The jitter is a hash of the element and
// its attempt number, so every worker computes the same delay and no backoff
// state is shared between elements.
type Backoff = terms.Backoff

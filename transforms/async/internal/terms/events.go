package terms

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// moved

// EventType names a transition in an element's life.
type EventType string

// The element events a Listener receives.
const (
	// EventAccepted: ProcessElement took the element into bag state.
	EventAccepted EventType = "accepted"
	// EventStarted: an attempt of the call began (Attempt is its number).
	// Before it, a listener (this worker's, or the one's that last held the
	// element) received the event that says where the attempt comes from:
	// EventAccepted before the element's first start (at once, or once a
	// queued element finds room), EventRetrying before a retry,
	// EventRescheduled before a start again of lost work.
	EventStarted EventType = "started"
	// EventSucceeded: an attempt returned without error.
	EventSucceeded EventType = "succeeded"
	// EventRetrying: a failed attempt will be retried after Delay (Kind and
	// Error describe the failure).
	EventRetrying EventType = "retrying"
	// EventFailed: the element failed for good (Kind and Error say why).
	EventFailed EventType = "failed"
	// EventCommitted: the element's outputs were emitted and it left bag
	// state, in one callback.
	EventCommitted EventType = "committed"
	// EventCancelled: local work was dropped because the element left bag
	// state elsewhere, its stale result was evicted, or its bundle failed.
	EventCancelled EventType = "cancelled"
	// EventRescheduled: an element whose work this worker lost or never
	// had is started again, just before its EventStarted. On unbounded
	// input: an element pending in bag state, with no retry due, that this
	// worker does not run (a restart, a moved key, an eviction, a failed
	// callback's work). On bounded input: an element evicted from its
	// bundle. Not a due retry (EventRetrying said it), nor a queued
	// element's first start; nor a retry whose attempt was lost after it
	// started, which bag state does not record: it starts again as a retry.
	EventRescheduled EventType = "rescheduled"
	// EventDeduplicated: a copy of a pending element was dropped from bag
	// state.
	EventDeduplicated EventType = "deduplicated"
	// EventProgress: the running call reported progress (see ReportProgress).
	EventProgress EventType = "progress"
	// EventLimitChanged: the adaptive concurrency limit of the worker moved
	// (WithAdaptiveParallelism); Limit is the new one. It is about no
	// element: Key is nil and ElementID empty.
	EventLimitChanged EventType = "limit_changed"
)

// Event is one transition of one element.
type Event struct {
	Type EventType `json:"type"`
	// Transform is the scope of the transform, as in its metrics' namespace.
	Transform string `json:"transform"`
	// Key is the element's key; KeyText prints it.
	Key     any    `json:"-"`
	KeyText string `json:"key"`
	// ElementID is the element's identity within its key, in hex (as in
	// Failure.ElementID).
	ElementID string `json:"element_id"`
	// Attempt is the number of the attempt the event is about (1 for the
	// first), or of the last one made; zero before any.
	Attempt int `json:"attempt,omitempty"`
	// Time is when the event happened, by the worker's clock.
	Time time.Time `json:"time"`
	// Delay is how long a retry waits (EventRetrying).
	Delay time.Duration `json:"delay_ns,omitempty"`
	// Kind and Error describe a failure (EventRetrying, EventFailed).
	Kind  string `json:"kind,omitempty"`
	Error string `json:"error,omitempty"`
	// Progress (0..1) and Details come from ReportProgress (EventProgress).
	Progress float64 `json:"progress,omitempty"`
	Details  string  `json:"details,omitempty"`
	// Limit is the new concurrency limit (EventLimitChanged).
	Limit int `json:"limit,omitempty"`
}

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
type Listener interface {
	OnEvent(Event)
}

// ListenerSpec is the serialisable form of a Listener.
type ListenerSpec struct {
	Type beam.EncodedType
	JSON string
}

package terms

// The events listeners receive, and the listeners as ParDo checked them.

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// EventType is documented for users where the front names it (async's types.go).
type EventType string

// The element events a Listener receives.
const (
	EventAccepted     EventType = "accepted"
	EventStarted      EventType = "started"
	EventSucceeded    EventType = "succeeded"
	EventRetrying     EventType = "retrying"
	EventFailed       EventType = "failed"
	EventCommitted    EventType = "committed"
	EventCancelled    EventType = "cancelled"
	EventRescheduled  EventType = "rescheduled"
	EventDeduplicated EventType = "deduplicated"
	EventProgress     EventType = "progress"
	EventLimitChanged EventType = "limit_changed"
)

// Event is documented for users where the front names it (async's types.go).
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

// Listener is documented for users where the front names it (async's types.go).
type Listener interface {
	OnEvent(Event)
}

// ListenerSpec is the serialisable form of a Listener.
type ListenerSpec struct {
	Type beam.EncodedType
	JSON string
}

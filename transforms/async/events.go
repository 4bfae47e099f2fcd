package async

// Lifecycle events of elements (accepted, started, committed...), the
// Listener interface that receives them, and the per-process hub that
// delivers them with panics contained.

import (
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"

	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

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

// listenerSpec is the serialisable form of a Listener.
type listenerSpec struct {
	Type beam.EncodedType
	JSON string
}

// inspectListeners checks the Listeners given to WithListener and returns
// what is shipped to workers, in the order given.
func inspectListeners(ls []Listener) ([]*listenerSpec, error) {
	specs := make([]*listenerSpec, 0, len(ls))
	for _, l := range ls {
		spec, err := inspectListener(l)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// inspectListener checks one Listener given to WithListener and returns
// what is shipped to workers.
func inspectListener(l Listener) (*listenerSpec, error) {
	t, err := wrapped.RegisteredStruct("WithListener", reflect.ValueOf(l))
	if err != nil {
		return nil, err
	}
	if v, ok := l.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("WithListener: %v: %w", t, err)
		}
	}
	body, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("WithListener: %v cannot be serialised as JSON of its exported fields: %w", t, err)
	}
	return &listenerSpec{Type: beam.EncodedType{T: t}, JSON: string(body)}, nil
}

// WithListener sends the transform's element events to l (see Listener).
// Given more than once, it adds a listener each time: every listener
// receives every event, in the order the options gave them (a listener's
// OnEvent returns before the next one's is called). Default: none, and no
// events are built.
func WithListener(l Listener) Option {
	return func(s *settings) {
		if l == nil || reflect.ValueOf(l).Kind() == reflect.Ptr && reflect.ValueOf(l).IsNil() {
			s.errs = append(s.errs, errors.New("WithListener: the listener is nil"))
			return
		}
		s.listeners = append(s.listeners, l)
	}
}

// hub delivers one transform's events to its listeners in one worker
// process; it lives in the state registry next to the transform's Pool.
// Panics happen on pool goroutines too, where Beam metrics cannot be
// updated, so they are counted here and published by the next callback.
type hub struct {
	listeners []*heard
	panics    atomic.Int64   // all so far, of every listener
	published *ledger.Ledger // of panics, as the Beam counter has them
}

// heard is one listener of a hub, and whether its first panic was logged.
type heard struct {
	Listener
	loggedPanic atomic.Bool
}

// newHub rebuilds the listeners from their specs and runs their Setup, in
// order. If one cannot be built, the ones before it are closed.
func newHub(specs []*listenerSpec) (*hub, error) {
	h := &hub{published: ledger.New(1)}
	for _, spec := range specs {
		l, err := buildListener(spec)
		if err != nil {
			h.Close()
			return nil, err
		}
		h.listeners = append(h.listeners, &heard{Listener: l})
	}
	return h, nil
}

// buildListener rebuilds one listener from its spec and runs its Setup.
func buildListener(spec *listenerSpec) (Listener, error) {
	ptr := reflect.New(spec.Type.T)
	if err := json.Unmarshal([]byte(spec.JSON), ptr.Interface()); err != nil {
		return nil, fmt.Errorf("async: rebuilding listener %v: %w", spec.Type.T, err)
	}
	l, ok := ptr.Interface().(Listener)
	if !ok {
		return nil, fmt.Errorf("async: listener type %v has no OnEvent(Event) method", ptr.Type())
	}
	if s, ok := l.(interface{ Setup() error }); ok {
		if err := s.Setup(); err != nil {
			return nil, fmt.Errorf("async: Setup of listener %v: %w", spec.Type.T, err)
		}
	}
	return l, nil
}

// deliver calls every listener in order; a panic in one is contained and
// the next one is still called.
func (h *hub) deliver(e Event) {
	for _, l := range h.listeners {
		h.deliverTo(l, e)
	}
}

// deliverTo calls one listener, containing a panic.
func (h *hub) deliverTo(l *heard, e Event) {
	defer func() {
		if r := recover(); r != nil {
			h.panics.Add(1)
			if l.loggedPanic.CompareAndSwap(false, true) {
				slog.Error("async: the event listener panicked; further panics are only counted",
					"listener", fmt.Sprintf("%T", l.Listener), "event", e.Type, "panic", r, "stack", string(debug.Stack()))
			}
		}
	}()
	l.OnEvent(e)
}

// Close closes every listener that can be closed, and returns their
// errors.
func (h *hub) Close() error {
	var errs []error
	for _, l := range h.listeners {
		if c, ok := l.Listener.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// events returns the transform's hub in this process, or nil without
// listeners. Like pool, it is looked up on every use so that a registry Reset
// is seen at once.
func (f *core) events() *hub {
	if len(f.Listeners) == 0 {
		return nil
	}
	h, err := f.worker().hubOf(f)
	if err != nil {
		// Setup made the hub; a failure now means a Reset since, and a Setup
		// that no longer succeeds.
		slog.Error("async: the event listener cannot be rebuilt", "transform", f.Name, "err", err)
		return nil
	}
	return h
}

// event counts one event about element id of key (see countEvent) and
// sends it, if there is a listener. fill sets the fields specific to the
// event's type.
func (f *core) event(typ EventType, key any, id string, attempt int, fill func(*Event)) {
	f.countEvent(typ)
	h := f.events()
	if h == nil {
		return
	}
	e := Event{Type: typ, Transform: f.Name, Key: key, KeyText: fmt.Sprint(key), ElementID: hex.EncodeToString([]byte(id)), Attempt: attempt, Time: f.clock.Now()}
	if fill != nil {
		fill(&e)
	}
	h.deliver(e)
}

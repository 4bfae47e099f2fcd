package worker

// The listeners' hub: one per transform in a worker process, built on first
// use; it hands each event to every listener.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync/atomic"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// Hub delivers one transform's events to its listeners in one worker
// process; it lives in the state registry next to the transform's Pool.
// Panics happen on pool goroutines too, where Beam metrics cannot be
// updated, so they are counted here and published by the next callback.
type Hub struct {
	Listeners []*Heard
	Panics    atomic.Int64   // all so far, of every listener
	Published *ledger.Ledger // of panics, as the Beam counter has them
}

// Heard is one listener of a hub, and whether its first panic was logged.
type Heard struct {
	terms.Listener
	loggedPanic atomic.Bool
}

// newHub rebuilds the listeners from their specs and runs their Setup, in
// order. If one cannot be built, the ones before it are closed.
func newHub(specs []*terms.ListenerSpec) (*Hub, error) {
	h := &Hub{Published: ledger.New(1)}
	for _, spec := range specs {
		l, err := buildListener(spec)
		if err != nil {
			h.Close()
			return nil, err
		}
		h.Listeners = append(h.Listeners, &Heard{Listener: l})
	}
	return h, nil
}

// buildListener rebuilds one listener from its spec and runs its Setup.
func buildListener(spec *terms.ListenerSpec) (terms.Listener, error) {
	ptr := reflect.New(spec.Type.T)
	if err := json.Unmarshal([]byte(spec.JSON), ptr.Interface()); err != nil {
		return nil, fmt.Errorf("async: rebuilding listener %v: %w", spec.Type.T, err)
	}
	l, ok := ptr.Interface().(terms.Listener)
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
func (h *Hub) deliver(e terms.Event) {
	for _, l := range h.Listeners {
		h.deliverTo(l, e)
	}
}

// deliverTo calls one listener, containing a panic.
func (h *Hub) deliverTo(l *Heard, e terms.Event) {
	defer func() {
		if r := recover(); r != nil {
			h.Panics.Add(1)
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
func (h *Hub) Close() error {
	var errs []error
	for _, l := range h.Listeners {
		if c, ok := l.Listener.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

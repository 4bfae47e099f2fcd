package worker

// An event about an element: counted for the metrics (counts.go) and sent
// to the transform's listeners (hub.go).

import (
	"encoding/hex"
	"fmt"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// Event counts one event about element id of key (see countEvent) and
// sends it, if there is a listener. fill sets the fields specific to the
// event's type.
func (f *Core) Event(typ terms.EventType, key any, id string, attempt int, fill func(*terms.Event)) {
	f.countEvent(typ)
	h := f.Events()
	if h == nil {
		return
	}
	e := terms.Event{Type: typ, Transform: f.Name, Key: key, KeyText: fmt.Sprint(key), ElementID: hex.EncodeToString([]byte(id)), Attempt: attempt, Time: f.clock.Now()}
	if fill != nil {
		fill(&e)
	}
	h.deliver(e)
}

// countEvent counts one event of type typ, if eventCounts counts its type
// (see Event, which calls it for every event).
func (f *Core) countEvent(typ terms.EventType) {
	switch typ {
	case terms.EventStarted, terms.EventSucceeded, terms.EventRetrying, terms.EventRescheduled, terms.EventProgress:
	default:
		return // counted where it is sent, with its bundle
	}
	c := f.eventCounts()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch typ {
	case terms.EventStarted:
		c.total.started++
	case terms.EventSucceeded:
		c.total.succeeded++
	case terms.EventRetrying:
		c.total.retried++
	case terms.EventRescheduled:
		c.total.rescheduled++
	case terms.EventProgress:
		c.total.progress++
	}
}

// CountAbandoned counts a task that a failing bundle dropped (cancelled),
// for a later bundle to publish.
func (f *Core) CountAbandoned() {
	c := f.eventCounts()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total.abandoned++
}

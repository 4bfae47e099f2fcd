package worker

// An element on its way to the pool (Element), and what travels with it:
// its window across the global-window DoFns (Carry) and the in-worker
// retry policy's verdict on it (RetryVerdict).

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
)

// Carry takes apart and makes the values that carry an element's window
// across the global-window DoFns. Their type is the front's (windowed),
// whose name is in the job graph, so the front sets Carry in its init.
var Carry struct {
	Open func(v any) (window string, value []byte, ok bool)
	Wrap func(window string, value []byte) any
}

// Element is one element about to be started.
type Element struct {
	// ID names the element (its key encoded with the input's coder, its
	// window, its ID, and on unbounded input where its key's state accepted
	// it); owner is the pool owner of its task, set when it is accepted.
	ID         state.ElementID
	Owner      string
	Key, Value any
	// ValueBytes is the value encoded with the input's coder; Timestamp is
	// its event time.
	ValueBytes []byte
	Timestamp  beam.EventTime
	// Done is how many attempts of the element failed before (from bag
	// state, or in its bundle before an eviction). rescheduled marks an
	// element whose earlier start this worker lost or never had, started
	// again (EventRescheduled): on unbounded input a pending element of bag
	// state with no retry due and no task here (a restart, a moved key, an
	// eviction, a failed callback's work), on bounded input one evicted
	// from its bundle. A due retry (after EventRetrying) and a queued
	// element's first start (after EventAccepted) are not.
	Done        int
	Priority    int
	Rescheduled bool
	// Previous is the error of the element's last attempt before (from
	// bag state), for the pool's gate; nil for a new element.
	Previous error
	// Verdict receives the in-worker retry policy's decision to stop
	// (RetryInWorker; nil otherwise), so that a declined retry is not
	// decided again; an error the policy never saw is decided in the
	// bounded path's finalFailure.
	Verdict *RetryVerdict
}

// Task is the key of the element's task in the pool.
func (el Element) Task() state.TaskKey { return state.TaskKey{Owner: el.Owner, Element: el.ID} }

// RetryVerdict is the in-worker retry policy's decision to stop retrying an
// element (declined), and why when its error does not say it (WithRetryIf
// panicked). A task that ended on an error without one ended on an error
// the policy never saw.
type RetryVerdict struct {
	Declined bool
	Why      string
}

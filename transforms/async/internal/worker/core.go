package worker

// The types the package hangs its methods on: Core, what an instance
// holds, and an element on its way to the pool.

import (
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// Core is what every DoFn of the transform shares, in three parts by
// lifetime: the configuration Beam ships to workers (terms.Config, as
// JSON), what each DoFn instance rebuilds from it in Setup (instance), and,
// looked up in the worker's registry on use, what lives once per worker
// process (the Pool, the event hub, the guard, the result cache). What lives for one
// bundle or one key's callback is the paths' (stream.Path's views and
// keyTurn, bounded.Path's bundleRun). The DoFns, in the front, hold their
// state and timer fields themselves, because Beam looks for them at the
// top level only.
type Core struct {
	terms.Config
	instance
}

// instance is what one DoFn instance builds in Setup (or a test sets): none
// of it is serialized. Its fields stay unexported: Beam registers a DoFn's
// exported fields, embedded ones included, as schema types (instance.go
// has the accessors).
type instance struct {
	clock    timers.Clock
	metrics  *terms.Metrics
	registry *state.Registry // nil: state.Default; tests model other workers
	user     *wrapped.Fn
	keyEnc   beam.ElementEncoder
	keyDec   beam.ElementDecoder
	valEnc   beam.ElementEncoder
	valDec   beam.ElementDecoder
	outEnc   beam.ElementEncoder // outputs, when the input carries windows
	// lastEvict is when this instance last looked for work to evict; the
	// scan is over the whole pool, so it runs at most once a second.
	lastEvict time.Time
	// lastGuardPublish is when this instance last published the guard's
	// counts (publishSharedSometimes).
	lastGuardPublish time.Time
	// waitPeriod, when set, replaces the bundle path's waitPeriod (tests).
	waitPeriod time.Duration
	// last is the transform's per-process object as this instance last
	// found it (worker.go), set in Setup: events are counted on the hot
	// path, on the pool's goroutines, without a registry lookup.
	last *atomic.Pointer[worker]
	// tickets is this instance's open bundle as the publishing ledgers
	// know it (publish.go); nil: publish as final at once (tests).
	tickets *BundleTickets
}

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

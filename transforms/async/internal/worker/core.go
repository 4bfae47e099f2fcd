package worker

// The type the package hangs its methods on: Core, and what a DoFn
// instance holds.

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
	// know it (tickets.go); nil: publish as final at once (tests).
	tickets *BundleTickets
}

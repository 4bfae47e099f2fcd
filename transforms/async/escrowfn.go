package async

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/drain"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// escrowFn is the end-of-input drain's stateful DoFn, as the job graph
// names it: it keeps, per key, the elements streamFn accepted and has not
// committed, and at the end of input runs those that remain (drain.Path).
// The elements it runs go through the bounded path of its bundleFn.
type escrowFn struct {
	bundleFn
	// Escrow is the key's log (entry kinds in internal/drain): escrowed
	// elements, releases, and the elements a drain ran.
	Escrow beamstate.Bag[[]byte]
	// EscrowSummary holds one entry, the key's drain.Summary. A bag, not
	// a value state: Beam Go keeps a value in a bag all the same, and bags
	// are what every runner this package supports has run.
	EscrowSummary beamstate.Bag[[]byte]
	// Drain fires near the global window's end (drainFiring), held where
	// the summary says, and is cleared when nothing is to be held.
	Drain beamtimers.EventTime

	drainer *drain.Path // the drain's path, made at the first callback
}

func newEscrowFn(c worker.Core) *escrowFn {
	return &escrowFn{bundleFn: *newBundleFn(c), Escrow: beamstate.MakeBagState[[]byte](drain.LogStateID),
		EscrowSummary: beamstate.MakeBagState[[]byte](drain.SummaryStateID), Drain: beamtimers.InEventTime(drain.DrainFamily + c.TimerSuffix)}
}

// drainPath is the drain's path that runs f's callbacks (path is its
// bundleFn's, which runs the elements it drains).
func (f *escrowFn) drainPath() *drain.Path {
	if f.drainer == nil {
		f.drainer = drain.New(f.path(), &f.Escrow, &f.EscrowSummary, &f.Drain)
	}
	return f.drainer
}

// StartBundle begins a bundle; only a drain runs anything in it.
func (f *escrowFn) StartBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.StartBundle(ctx, emit, fail)
}

// FinishBundle waits for what a drain in this bundle started, and emits it.
func (f *escrowFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.FinishBundle(ctx, emit, fail)
}

// ProcessElement applies one callback record of streamFn to the key.
func (f *escrowFn) ProcessElement(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, raw []byte, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure)) error {
	return f.drainPath().ProcessElement(ctx, sp, tp, key, raw)
}

// OnTimer is the end of input for the key: it drains what the key holds.
func (f *escrowFn) OnTimer(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, timer beamtimers.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.drainPath().OnTimer(ctx, sp, tp, key, timer, emit, fail)
}

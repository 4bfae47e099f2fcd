package async

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/stream"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// streamFn is the stateful DoFn of unbounded input: the shipped core, the
// key's bags and its timer, as the job graph names them. Its callbacks are
// the unbounded path's (stream.Path).
type streamFn struct {
	worker.Core
	// Pending holds every accepted element of a key until its output is
	// committed: the durable queue of in-flight work.
	Pending beamstate.Bag[[]byte]
	// Queued holds the elements that found no room, until a callback of
	// their key has room to start them (see stream.QueuedStateID).
	Queued beamstate.Bag[[]byte]
	// Commit fires when the planner says (package stream, turn.go: plan).
	Commit beamtimers.ProcessingTime

	unbounded *stream.Path // made at the first callback
}

func newStreamFn(c worker.Core) *streamFn {
	return &streamFn{Core: c, Pending: beamstate.MakeBagState[[]byte](stream.PendingStateID), Queued: beamstate.MakeBagState[[]byte](stream.QueuedStateID),
		Commit: beamtimers.InProcessingTime(stream.CommitFamily + c.TimerSuffix)}
}

// path is the unbounded path that runs f's callbacks.
func (f *streamFn) path() *stream.Path {
	if f.unbounded == nil {
		f.unbounded = stream.New(&f.Core, &f.Pending, &f.Queued, &f.Commit)
	}
	return f.unbounded
}

// StartBundle begins a bundle of the path.
func (f *streamFn) StartBundle(_ context.Context, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure), _ stream.EscrowEmit) {
	f.path().StartBundle()
}

// FinishBundle ends a bundle of the path.
func (f *streamFn) FinishBundle(_ context.Context, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure), _ stream.EscrowEmit) error {
	return f.path().FinishBundle()
}

// ProcessElement takes one element of a key.
func (f *streamFn) ProcessElement(ctx context.Context, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, value beam.Y, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure), escrow stream.EscrowEmit) error {
	return f.path().ProcessElement(ctx, ts, sp, tp, key, value, emit, fail, escrow)
}

// OnTimer commits a key at its timer.
func (f *streamFn) OnTimer(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, timer beamtimers.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure), escrow stream.EscrowEmit) error {
	return f.path().OnTimer(ctx, sp, tp, key, timer, emit, fail, escrow)
}

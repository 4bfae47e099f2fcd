package async

// The DoFn for unbounded input: elements wait in bag state, and each key
// commits its finished elements from its own callbacks: a processing-time
// timer set where timers.Cadence.Plan says, and the first ProcessElement of
// the key in each bundle. Each callback is one turn of its key (turn.go). It
// runs in the global window, each element with its own window (windows.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// commitFamily begins the name of streamFn's processing-time timer
// family; the transform's TimerSuffix ends it.
const commitFamily = "asyncCommit"

// escrowEmit is streamFn's third output: per key callback, the records of
// the end-of-input drain (escrow.go), keyed by the callback's key.
type escrowEmit = func(beam.EventTime, beam.X, []byte)

// streamFn runs unbounded input. Committing from ProcessElement too is what
// keeps a busy key moving: a runner does not fire the timer of a key that is
// in a bundle in progress (prism defers it), so under steady input a key's
// timer could wait until the input stops, while its ProcessElement holds the
// same state and commits atomically with its bundle just the same.
type streamFn struct {
	worker.Core
	// Pending holds every accepted element of a key until its output is
	// committed: the durable queue of in-flight work.
	Pending beamstate.Bag[[]byte]
	// Queued holds the elements that found no room, until a callback of
	// their key has room to start them (see queuedStateID).
	Queued beamstate.Bag[[]byte]
	// Commit fires when the planner says (keyTurn.plan).
	Commit beamtimers.ProcessingTime

	views     views     // this bundle's keys
	lastSweep time.Time // see sweepUnbuffered
}

func newStreamFn(c worker.Core) *streamFn {
	return &streamFn{Core: c, Pending: beamstate.MakeBagState[[]byte](pendingStateID), Queued: beamstate.MakeBagState[[]byte](queuedStateID),
		Commit: beamtimers.InProcessingTime(commitFamily + c.TimerSuffix)}
}

// StartBundle forgets the last bundle's view of its keys; its
// ProcessElement may wait for room up to WithMaxWait.
func (f *streamFn) StartBundle(_ context.Context, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure), _ escrowEmit) {
	f.views = views{wait: f.MaxWait, began: f.Clock().Now()}
	f.Tickets().Begin()
}

// FinishBundle tells the pool's pace (timers.Pace) which of the bundle's
// keys had a timer that fell due while the bundle held them: the runner
// could not fire it, and the planner must set later timers further out.
// The counts the bundle published become final (internal/worker/publish.go).
func (f *streamFn) FinishBundle(_ context.Context, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure), _ escrowEmit) error {
	if len(f.views.byOwner) == 0 {
		f.Tickets().Finish()
		return nil
	}
	pool, err := f.Pool()
	if err != nil {
		f.Tickets().Release()
		return err
	}
	f.Tickets().Finish()
	var inForce []timers.Plan
	for _, v := range f.views.byOwner {
		if v.planned {
			inForce = append(inForce, v.plan)
		}
	}
	pool.Pace().BundleEnded(f.views.began, f.Clock().Now(), inForce, f.Cadence().GuardCap/2)
	return nil
}

// ProcessElement takes one element of a key: the key's lifecycle steps
// (turn.go), with its element accepted after the bundle's first commit of
// the key.
func (f *streamFn) ProcessElement(ctx context.Context, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, value beam.Y, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure), escrow escrowEmit) error {
	k, err := f.open(ctx, sp, key, true, emit, fail, escrow)
	if err != nil {
		return err
	}
	el, err := f.Prepare(key, value, k.v.kb, ts)
	if err != nil {
		return err
	}
	// With WithIDFn, an element whose ID was pending when the bundle began is
	// one element with it, even if commitOnce commits that one now.
	isCopy := f.IDFn != nil && k.v.byID[el.ID.Base()] != nil
	if err := k.commitOnce(false); err != nil {
		return err
	}
	if err := k.accept(el, isCopy); err != nil {
		return err
	}
	if err := k.store(); err != nil {
		return err
	}
	k.plan(tp, true)
	f.sweepUnbuffered(ctx, k.pool)
	return nil
}

// OnTimer commits the key: the key's lifecycle steps (turn.go) without an
// element.
func (f *streamFn) OnTimer(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, timer beamtimers.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure), escrow escrowEmit) error {
	if timer.Family != f.Commit.Family {
		return fmt.Errorf("async: timer of unknown family %q", timer.Family)
	}
	k, err := f.open(ctx, sp, key, false, emit, fail, escrow)
	if err != nil {
		return err
	}
	k.fired()
	f.sweepUnbuffered(ctx, k.pool)
	if err := k.commitOnce(true); err != nil {
		return err
	}
	if err := k.store(); err != nil {
		return err
	}
	k.plan(tp, false)
	return nil
}

// sweepUnbuffered drops, at most once a minute, the tasks that hold no place
// (an ordered key's earliest element, started without one) of keys that had
// no callback on this worker for ten stale periods: keys that moved to
// another worker. Eviction for room never reaches them, since removing them
// frees no place; the long wait keeps a key whose callbacks come late from
// losing its result to the sweep and calling again.
func (f *streamFn) sweepUnbuffered(ctx context.Context, pool *state.Pool) {
	now := f.Clock().Now()
	if !f.Ordered || now.Sub(f.lastSweep) < time.Minute {
		return
	}
	f.lastSweep = now
	f.ReportEvicted(ctx, pool.EvictIdleUnbuffered(now.Add(-f.Cadence().Gone)))
}

package async

// The DoFn for unbounded input: elements wait in bag state, and each key
// commits its finished elements from its own callbacks: a processing-time
// timer set where timers.Cadence.Plan says, and the first ProcessElement of
// the key in each bundle. It runs in the global window,
// each element with its own window (windows.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
)

// commitFamily names the processing-time timer family of streamFn.
const commitFamily = "asyncCommit"

// streamFn runs unbounded input. Committing from ProcessElement too is what
// keeps a busy key moving: a runner does not fire the timer of a key that is
// in a bundle in progress (prism defers it), so under steady input a key's
// timer could wait until the input stops, while its ProcessElement holds the
// same state and commits atomically with its bundle just the same.
type streamFn struct {
	core
	// Pending holds every accepted element of a key until its output is
	// committed: the durable queue of in-flight work.
	Pending beamstate.Bag[[]byte]
	// Queued holds the elements that found no room, until a callback of
	// their key has room to start them (see queuedStateID).
	Queued beamstate.Bag[[]byte]
	// Commit fires when the planner says (arm).
	Commit beamtimers.ProcessingTime

	views     views     // this bundle's keys
	lastSweep time.Time // see sweepUnbuffered
}

func newStreamFn(c core) *streamFn {
	return &streamFn{core: c, Pending: beamstate.MakeBagState[[]byte](pendingStateID), Queued: beamstate.MakeBagState[[]byte](queuedStateID),
		Commit: beamtimers.InProcessingTime(commitFamily)}
}

// StartBundle forgets the last bundle's view of its keys; its
// ProcessElement may wait for room up to WithMaxWait.
func (f *streamFn) StartBundle(_ context.Context, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure)) {
	f.views = views{wait: f.MaxWait, began: f.clock.Now()}
}

// FinishBundle tells the pool's pace (timers.Pace) which of the bundle's
// keys had a timer that fell due while the bundle held them: the runner
// could not fire it, and the planner must set later timers further out.
func (f *streamFn) FinishBundle(_ context.Context, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure)) error {
	if len(f.views.byOwner) == 0 {
		return nil
	}
	pool, err := f.pool()
	if err != nil {
		return err
	}
	var inForce []timers.Plan
	for _, v := range f.views.byOwner {
		if v.planned {
			inForce = append(inForce, v.plan)
		}
	}
	pool.Pace().BundleEnded(f.views.began, f.clock.Now(), inForce, f.cadence().GuardCap/2)
	return nil
}

// ProcessElement commits the key at its first touch in the bundle, then
// accepts the element and sets the key's timer.
func (f *streamFn) ProcessElement(ctx context.Context, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, value beam.Y, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	pool, v, err := f.takeElement(ctx, &f.Pending, &f.Queued, &f.views, sp, ts, key, value, emit, fail)
	if err != nil {
		return err
	}
	f.arm(tp, pool, v, true)
	f.sweepUnbuffered(ctx, pool)
	return nil
}

// OnTimer commits the key.
func (f *streamFn) OnTimer(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, timer beamtimers.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	if timer.Family != commitFamily {
		return fmt.Errorf("async: timer of unknown family %q", timer.Family)
	}
	ks, pool, v, err := f.openKey(ctx, &f.Pending, &f.Queued, &f.views, sp, key, false)
	if err != nil {
		return err
	}
	v.committed = false       // a timer always commits, even after a ProcessElement of this bundle
	pool.Pace().Drop(v.owner) // it fired: no overrun, whenever this bundle ends
	v.planned = false
	f.sweepUnbuffered(ctx, pool)
	if err := f.commitOnce(ctx, pool, ks, v, true, emit, fail); err != nil {
		return err
	}
	if err := v.write(ks); err != nil {
		return err
	}
	f.arm(tp, pool, v, false)
	return nil
}

// sweepUnbuffered drops, at most once a minute, the tasks that hold no place
// (an ordered key's earliest element, started without one) of keys that had
// no callback on this worker for ten stale periods: keys that moved to
// another worker. Eviction for room never reaches them, since removing them
// frees no place; the long wait keeps a key whose callbacks come late from
// losing its result to the sweep and calling again.
func (f *streamFn) sweepUnbuffered(ctx context.Context, pool *state.Pool) {
	now := f.clock.Now()
	if !f.Ordered || now.Sub(f.lastSweep) < time.Minute {
		return
	}
	f.lastSweep = now
	f.reportEvicted(ctx, pool.EvictIdleUnbuffered(now.Add(-f.cadence().Moved)))
}

// arm sets the key's timer while it has pending or queued elements, held
// at their earliest event time, for the instant timers.Cadence.Plan picks
// from what the key holds, the pool's load and the runner's pace. An empty
// key sets none, so that a bounded pipeline can end.
func (f *streamFn) arm(tp beamtimers.Provider, pool *state.Pool, v *keyView, element bool) {
	pace := pool.Pace()
	if v.empty() {
		pace.Drop(v.owner)
		return
	}
	now := f.clock.Now()
	perWave := f.Parallelism
	if f.Batch != nil {
		perWave *= f.Batch.Size
	}
	at := f.cadence().Plan(timers.Facts{
		Now:         now,
		AtElement:   element,
		Seen:        v.seen,
		Gaps:        v.arrivals.Gaps,
		Gap:         v.arrivals.Gap,
		MeanGap:     v.arrivals.MeanGap,
		Active:      len(v.entries) + int(v.queue.Count) - v.res.waitingRetries - v.res.heldBack,
		Queued:      max(v.res.queued, int(v.queue.Count)), // the commit's count, or more if this bundle queued since
		Running:     v.res.running,
		ShortestRun: v.res.shortestRun,
		RetryDue:    v.res.dueNext,
		Pool:        timers.Load{Expected: pool.ExpectedLatency(), Unfinished: pool.Unfinished(), Held: pool.Len(), PerWave: perWave},
		Runner:      pace.Runner(now),
	})
	pace.Planned(v.owner, at, now, f.cadence())
	f.Commit.Set(tp, at, beamtimers.WithOutputTimestamp(v.hold()))
}

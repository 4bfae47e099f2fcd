package async

// The DoFn for unbounded input: elements wait in bag state, and each key
// commits its finished elements from its own callbacks: a processing-time
// timer on the commit grid (a quarter of the callback frequency), and the
// first ProcessElement of the key in each bundle. It runs in the global window,
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
	// Commit fires on the commit grid, or as a busy key's backstop (arm).
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
	f.views = views{wait: f.MaxWait}
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
	v.committed = false // a timer always commits, even after a ProcessElement of this bundle
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
	f.reportEvicted(ctx, pool.EvictIdleUnbuffered(now.Add(-10*f.staleAfter())))
}

// arm sets the key's timer while it has pending or queued elements (an
// empty key sets none, so that a bounded pipeline can end), held at their
// earliest event time.
//
// A quiet key's timer commits it: it is set for when the key's started work
// is expected to have finished (the observed call latency, times the waves
// of unfinished work the pool holds, or of half the work it holds when the
// key has elements queued for room; at least MinRearm, at most C ahead; C/4
// when a timer finds
// the work running before any call has finished to measure), rounded up to
// the commit grid (timers.Grid: a quarter of C), instants all keys share, so
// the runner delivers their callbacks together. A result that finishes as
// expected waits at most a grid step for its commit; one that finishes
// later waits for the next callback, set the same way; when a timer finds
// every element the key has in flight in a call that has run a while, the
// next one comes after a quarter of the shortest such run at least, at most
// C (timers.LongCallWait), so a hung call costs its key a callback every
// five grid steps instead of every one. Elements queued for
// room count as work to come back for; finished results held back behind
// an earlier element (WithOrdered) and retries waiting out their backoff do
// not: those come back when the first retry is due.
//
// A busy key, one whose elements come less than max(2C, 2 s) apart
// (timers.BusyWithin; at an element: since its last one; at a timer: its
// last two came that close, and its last within that time), is committed
// by its own bundles, and its timer is only a backstop for when they stop:
// it is set timers.BusyBackstop ahead (three mean gaps between its elements,
// within [max(C/2, 250 ms), max(2C, 2 s)]), on the next quarter round, so
// that it falls beyond the key's next bundle.
func (f *streamFn) arm(tp beamtimers.Provider, pool *state.Pool, v *keyView, element bool) {
	if v.empty() {
		return
	}
	now := f.clock.Now()
	if meanGap, busy := v.busy(now, element, timers.BusyWithin(f.CallbackFrequency)); busy {
		ahead := timers.BusyBackstop(f.CallbackFrequency, meanGap)
		f.Commit.Set(tp, timers.NextRound(now.Add(ahead), f.CallbackFrequency/timers.PhaseSlots, 0), beamtimers.WithOutputTimestamp(v.hold()))
		return
	}
	var next time.Time
	if active := len(v.entries) + int(v.queue.Count) - v.res.waitingRetries - v.res.heldBack; active > 0 {
		grid := timers.Grid(f.CallbackFrequency)
		// The key's work finishes behind the pool's unfinished work: about
		// that many calls over the parallelism (requests of batch size
		// elements with BatchParDo) of latency each, and never more than a
		// period ahead.
		perWave := f.Parallelism
		if f.Batch != nil {
			perWave *= f.Batch.Size
		}
		waves := time.Duration(max(1, pool.Unfinished()/perWave))
		if v.res.queued > 0 {
			// Elements queued for room start once commits free places:
			// come back when the pool is expected to have reached the work
			// it holds, finished or not (half of it, so that results are
			// committed, and room freed, before the pool runs dry).
			waves = time.Duration(max(1, pool.Len()/(2*perWave)))
		}
		expected := pool.ExpectedLatency() * waves
		if expected == 0 && !element {
			// No call has finished yet, and this key's is still running:
			// come back a quarter round later rather than every step.
			expected = f.CallbackFrequency / timers.PhaseSlots
		}
		if !element && v.res.running == active {
			// Every element of the key is in a call that has run a while
			// (a slow or hung one): look again in proportion to how long.
			expected = max(expected, timers.LongCallWait(v.res.shortestRun, f.CallbackFrequency))
		}
		expected = min(max(expected, timers.MinRearm), f.CallbackFrequency)
		next = timers.NextRound(now.Add(expected), grid, 0)
	}
	if !v.res.dueNext.IsZero() {
		next = earliest(next, v.res.dueNext)
		if soonest := now.Add(timers.MinRearm); next.Before(soonest) {
			next = soonest
		}
	}
	f.Commit.Set(tp, next, beamtimers.WithOutputTimestamp(v.hold()))
}

// busy reports whether the key's elements come less than within apart (at
// an element: the time since the key's last one is under within; at a
// timer: the time between its last two is, and the last came less than
// within ago), and the mean gap between them, which its backstop is
// measured from. A quiet key's timer that finds its work still running is
// therefore not mistaken for a busy one by the element that armed it; a
// busy key's backstop that finds work running (its bundles lag) sets
// another backstop, not a timer every grid step, which would load the
// runner when it can least afford it.
func (v *keyView) busy(now time.Time, element bool, within time.Duration) (time.Duration, bool) {
	if v.seen.IsZero() {
		return 0, false
	}
	since := now.Sub(v.seen)
	if element {
		return v.arrivals.MeanGap, since < within
	}
	return v.arrivals.MeanGap, v.arrivals.Gaps > 0 && v.arrivals.Gap < within && since < within
}

package async

// The DoFn for unbounded input: elements wait in bag state, and each key
// commits its finished elements from its own callbacks: a processing-time
// timer on round increments of the callback frequency, and the first
// ProcessElement of the key in each bundle. It runs in the global window,
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
	// Commit fires on round increments of the callback frequency.
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
// The timer follows the key's work: it comes when that work is expected to
// have finished (the observed call latency, times the waves of work queued
// before it; see expectedFinish), on a grid of C/20 that all keys share, so
// that the runner delivers the callbacks of many keys together. A key
// whose next element is due before then (its elements come closer than its
// work takes) is committed by that element's bundle, and its timer is a
// backstop: one and a half gaps ahead, so that it rarely falls due while the
// key is in a bundle (prism re-queues such a timer in a loop until the
// bundle ends). A timer that finds elements queued for room, or work still
// running, comes back when the pool is expected to have reached it; one
// whose key waits out a retry's backoff, when the first is due. No timer is
// set beyond the key's next round of C.
func (f *streamFn) arm(tp beamtimers.Provider, pool *state.Pool, v *keyView, element bool) {
	if v.empty() {
		return
	}
	now := f.clock.Now()
	round := timers.NextRound(now, f.CallbackFrequency, timers.Phase(v.kb, f.CallbackFrequency))
	var next time.Time
	if active := len(v.entries) + int(v.queue.Count) - v.res.waitingRetries; active > 0 {
		ahead := f.expectedFinish(pool, v.res.queued > 0)
		var gap time.Duration // between the key's elements, while they still come
		switch {
		case element && !v.seen.IsZero():
			gap = now.Sub(v.seen)
		case !element && v.gap > 0 && now.Sub(v.seen) < 2*v.gap:
			gap = v.gap
		}
		if gap > 0 && gap < max(4*ahead, sparseGap) {
			ahead = max(ahead, busyBackstop, gap*3/2)
			next = timers.NextRound(now.Add(ahead), f.CallbackFrequency/timers.PhaseSlots, 0)
		} else if next = timers.NextRound(now.Add(ahead), f.grid(), 0); next.After(round) {
			next = round
		}
	}
	if !v.res.dueNext.IsZero() {
		next = earliest(next, v.res.dueNext)
		if soonest := now.Add(timers.MinRearm); next.Before(soonest) {
			next = soonest
		}
	}
	f.Commit.Set(tp, next, beamtimers.WithOutputTimestamp(v.hold()))
}

// A key whose elements come less than sparseGap apart (or less than four
// times its work's expected time) is busy: its own bundles commit it, and
// its timer is a backstop at least busyBackstop (and one and a half gaps)
// ahead, on quarter rounds of C.
const (
	sparseGap    = time.Second
	busyBackstop = 250 * time.Millisecond
)

// grid is the spacing of the instants commit timers fire on: C/20, at least
// timers.MinRearm.
func (f *streamFn) grid() time.Duration { return max(timers.MinRearm, f.CallbackFrequency/20) }

// expectedFinish is how long a key's newest work is expected to take: the
// observed call latency, once per wave of the work the pool has not
// finished before it (the calls that wait for a slot, or held / 2P when
// elements wait in bag state for room, queued), and once more for the
// spread of calls. Before any call has finished, a quarter of C.
func (f *streamFn) expectedFinish(pool *state.Pool, queued bool) time.Duration {
	latency := pool.ExpectedLatency()
	if latency <= 0 {
		return f.CallbackFrequency / 4
	}
	waves := 1 + max(0, pool.Unfinished()-f.Parallelism)/f.Parallelism
	if queued {
		waves = max(waves, pool.Len()/(2*f.Parallelism))
	}
	return latency * time.Duration(waves+1)
}

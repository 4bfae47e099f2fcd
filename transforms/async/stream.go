package async

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

// streamFn is the DoFn for unbounded input: a key's outputs are committed by a
// processing-time timer on round increments of the callback frequency.
type streamFn struct {
	core
	// Pending holds every accepted element of a key (and window) until its
	// output is committed: the durable queue of in-flight work.
	Pending beamstate.Bag[[]byte]
	// Commit fires on round increments of the callback frequency.
	Commit beamtimers.ProcessingTime
}

func newStreamFn(c core) *streamFn {
	return &streamFn{core: c, Pending: beamstate.MakeBagState[[]byte](pendingStateID), Commit: beamtimers.InProcessingTime(commitFamily)}
}

func (f *streamFn) keyState(sp beamstate.Provider) keyState {
	return keyState{bag: &f.Pending, sp: sp}
}

// ProcessElement accepts one element and sets the key's commit timer to the
// next round increment, the same instant for every element of the key in
// that period, so a busy key does not push its own commit back.
func (f *streamFn) ProcessElement(ctx context.Context, _ beam.Window, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, value beam.Y, _ func(beam.Z), _ func(Failure)) error {
	kb, err := f.accept(ctx, ts, f.keyState(sp), key, value)
	if err != nil {
		return err
	}
	f.Commit.Set(tp, f.nextRound(kb), beamtimers.WithOutputTimestamp(ts.ToTime()))
	return nil
}

func (f *streamFn) nextRound(kb []byte) time.Time {
	return timers.NextRound(f.clock.Now(), f.freq(), timers.Phase(kb, f.freq()))
}

// OnTimer commits the key.
func (f *streamFn) OnTimer(ctx context.Context, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, timer beamtimers.Context, emit func(beam.Z), fail func(Failure)) error {
	if timer.Family != commitFamily {
		return fmt.Errorf("async: timer of unknown family %q", timer.Family)
	}
	return f.commit(ctx, ts, sp, tp, key, emit, fail)
}

// commit is the exactly-once step of one key: the outputs of finished
// elements (and the failure records of elements that failed for good) are
// emitted and those elements are removed from bag state in the same callback,
// so the runner commits both or neither. A failed attempt that will be
// retried is written back to bag state with its attempt count and the time of
// its next attempt, and holds no pool slot while it waits.
//
// With WithOrdered, entries are visited in acceptance order and a finished
// result is held back (kept, with its task) while an earlier element is
// unresolved.
func (f *streamFn) commit(ctx context.Context, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key any, emit func(beam.Z), fail func(Failure)) error {
	ks := f.keyState(sp)
	entries, changed, err := f.readPending(ctx, ks, key)
	if err != nil || len(entries) == 0 {
		return err // an empty bag sets no timer, so a bounded pipeline can end
	}
	kb, err := encode(f.keyEnc, key)
	if err != nil {
		return fmt.Errorf("async: encoding key %v: %w", key, err)
	}
	pool, err := f.pool()
	if err != nil {
		return err
	}
	f.cancelStale(ctx, pool, key, string(kb), entries)
	if f.Ordered {
		sortBySeq(entries)
	}

	now := f.clock.Now()
	var keep, toStart []pending
	var done []finishedEntry
	var failures []Failure
	var dueNext time.Time // earliest retry that is not due yet
	waitingRetries := 0   // kept entries that wait for their backoff
	blocked := false      // an earlier element of the key is unresolved
	for _, e := range entries {
		t := pool.Lookup(state.TaskKey{Owner: string(kb), ID: e.env.ID})
		switch {
		case t == nil:
			if due := time.UnixMilli(e.env.NextAttemptMs); e.env.NextAttemptMs != 0 && due.After(now) {
				dueNext = earliest(dueNext, due)
				waitingRetries++
			} else {
				toStart = append(toStart, e)
			}
			keep = append(keep, e)
			blocked = true
		case t.Status() != state.Finished:
			f.metrics.observeRunning(ctx, t)
			keep = append(keep, e)
			blocked = true
		default:
			_, callErr := t.Result()
			if callErr == nil {
				if f.Ordered && blocked {
					keep = append(keep, e) // its turn comes after the earlier ones
					continue
				}
				done = append(done, finishedEntry{t: t, env: e.env})
				continue
			}
			// Forget the task either way: a retry starts a new one, and if
			// this callback fails the retried callback runs it again.
			pool.Remove(t)
			out, err := f.settle(ctx, key, kb, e.env, t, callErr)
			if err != nil {
				return err
			}
			changed = true
			if out.failure != nil {
				failures = append(failures, *out.failure)
				f.metrics.observeFinished(ctx, t, now)
				f.metrics.failed.Inc(ctx, 1)
				continue
			}
			f.metrics.retried.Inc(ctx, 1)
			retry := pending{raw: out.retry.Encode(), env: *out.retry}
			keep = append(keep, retry)
			waitingRetries++
			blocked = true
			dueNext = earliest(dueNext, time.UnixMilli(retry.env.NextAttemptMs))
		}
	}
	for _, d := range done {
		pool.Remove(d.t)
		f.metrics.observeFinished(ctx, d.t, now)
		f.emitCommitted(ctx, key, d, emit)
	}
	for _, fr := range failures {
		fail(fr)
	}
	changed = changed || len(done) > 0
	queued, err := f.startFromState(ctx, pool, key, kb, keep, toStart)
	if err != nil {
		return err
	}
	f.metrics.inFlight.Set(ctx, int64(pool.Len()))
	f.metrics.queued.Set(ctx, int64(queued+waitingRetries))
	f.publish(ctx)
	if changed {
		if err := f.rewrite(ks, keep); err != nil {
			return err
		}
	}
	if len(keep) > 0 {
		// Work remains. Running work: come back at the next round, which
		// keys share, so the runner delivers their callbacks together.
		// Elements waiting in bag state for room: come back when running
		// work is expected to have finished, so they do not wait a whole
		// round for the room it frees. Retries waiting for their backoff:
		// come back when the first is due.
		var next time.Time
		if active := len(keep) - waitingRetries; active > 0 {
			next = f.nextRound(kb)
			if queued > 0 {
				next = timers.Rearm(now, next, pool.ExpectedLatency())
			}
		}
		if !dueNext.IsZero() {
			next = earliest(next, dueNext)
			if soonest := now.Add(timers.MinRearm); next.Before(soonest) {
				next = soonest
			}
		}
		f.Commit.Set(tp, next, beamtimers.WithOutputTimestamp(ts.ToTime()))
	}
	return nil
}

// startFromState starts what this worker does not know (state written by
// another worker or before a restart, queued for want of room, or a retry now
// due), now that the committed elements have freed their places: by priority,
// or in acceptance order when ordered. Without room an element stays queued
// in bag state for a later callback, and queued counts those; but the key's
// earliest element (keep[0]) under WithOrdered starts outside the buffer,
// since the key's held results wait for it.
func (f *streamFn) startFromState(ctx context.Context, pool *state.Pool, key any, kb []byte, keep, toStart []pending) (queued int, err error) {
	items := make([]startItem, 0, len(toStart))
	for _, e := range toStart {
		value, err := decode(f.valDec, e.env.Value)
		if err != nil {
			return 0, fmt.Errorf("async: decoding a value of key %v from bag state: %w", key, err)
		}
		prio, err := f.priority(value)
		if err != nil {
			return 0, err
		}
		items = append(items, startItem{e: e, value: value, priority: prio})
	}
	head := ""
	if f.Ordered && len(keep) > 0 {
		head = keep[0].env.ID
	} else {
		byPriority(items, func(it startItem) int { return it.priority })
	}
	for _, it := range items {
		el := element{k: state.TaskKey{Owner: string(kb), ID: it.e.env.ID}, id: it.e.env.ID, kb: kb, key: key, value: it.value,
			done: it.e.env.Attempts, priority: it.priority, fromState: true}
		_, adm, err := f.submit(ctx, pool, el, 0)
		if err != nil {
			return 0, err
		}
		if adm == state.NoRoom && it.e.env.ID == head {
			if _, err := f.startUnbuffered(ctx, pool, el); err != nil {
				return 0, err
			}
			adm = state.Started
		}
		if adm != state.Started {
			queued++
			continue
		}
		f.metrics.rescheduled.Inc(ctx, 1)
	}
	return queued, nil
}

// rewrite replaces the key's bag state with keep (there is no removal of
// single entries in Beam's bag state).
func (f *core) rewrite(ks keyState, keep []pending) error {
	if err := ks.bag.Clear(ks.sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	for _, e := range keep {
		if err := ks.bag.Add(ks.sp, e.raw); err != nil {
			return fmt.Errorf("async: rewriting bag state: %w", err)
		}
	}
	return nil
}

// finishedEntry is an element whose call succeeded, with its bag entry.
type finishedEntry struct {
	t   *state.Task
	env state.Envelope
}

// emitCommitted emits a finished element's outputs; the caller removes the
// element from bag state in the same callback and has forgotten its task.
func (f *core) emitCommitted(ctx context.Context, key any, d finishedEntry, emit func(beam.Z)) {
	outputs, _ := d.t.Result()
	for _, o := range outputs {
		emit(o)
	}
	f.metrics.committed.Inc(ctx, 1)
	f.event(EventCommitted, key, d.env.ID, d.env.Attempts+d.t.Attempts(), nil)
}

// earliest returns the earlier of a and b, where the zero time means unset.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

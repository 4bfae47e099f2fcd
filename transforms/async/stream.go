package async

import (
	"context"
	"errors"
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

// ProcessElement accepts one element and sets the key's commit timer to the
// next round increment, the same instant for every element of the key in
// that period, so a busy key does not push its own commit back.
func (f *streamFn) ProcessElement(ctx context.Context, _ beam.Window, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, value beam.Y, _ func(beam.Z)) error {
	kb, err := f.accept(ctx, ts, &f.Pending, sp, key, value)
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
func (f *streamFn) OnTimer(ctx context.Context, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, timer beamtimers.Context, emit func(beam.Z)) error {
	if timer.Family != commitFamily {
		return fmt.Errorf("async: timer of unknown family %q", timer.Family)
	}
	return f.commit(ctx, ts, sp, tp, key, emit)
}

// commit is the exactly-once step of one key: outputs of finished elements are
// emitted and those elements are removed from bag state in the same callback,
// so the runner commits both or neither.
func (f *streamFn) commit(ctx context.Context, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key any, emit func(beam.Z)) error {
	entries, dropped, err := f.readPending(&f.Pending, sp)
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
	cancelStale(pool, string(kb), entries)

	var done []*state.Task
	var keep, unknown []pending
	var failed []error
	for _, e := range entries {
		t := pool.Lookup(state.TaskKey{Key: string(kb), ID: e.env.ID})
		switch {
		case t == nil:
			unknown = append(unknown, e)
			keep = append(keep, e)
		case t.Status() != state.Finished:
			keep = append(keep, e)
		default:
			if _, err := t.Result(); err != nil {
				// Forget it so that the retried bundle runs it again.
				pool.Remove(t)
				failed = append(failed, fmt.Errorf("element %x: %w", e.env.ID, err))
				continue
			}
			done = append(done, t)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("async: %d element(s) of key %v failed; the commit of this key fails so that the runner retries it: %w", len(failed), key, errors.Join(failed...))
	}
	for _, t := range done {
		outputs, _ := t.Result()
		for _, o := range outputs {
			emit(o)
		}
		pool.Remove(t)
	}
	// Start what this worker does not know (state written by another worker
	// or before a restart, or queued for want of room), now that the
	// committed elements have freed their places.
	for _, e := range unknown {
		value, err := decode(f.valDec, e.env.Value)
		if err != nil {
			return fmt.Errorf("async: decoding a value of key %v from bag state: %w", key, err)
		}
		// Without room the element stays queued in bag state for a later callback.
		if _, _, err := f.submit(ctx, pool, state.TaskKey{Key: string(kb), ID: e.env.ID}, 0, key, value); err != nil {
			return err
		}
	}
	if len(done) > 0 || dropped {
		if err := f.Pending.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
		for _, e := range keep {
			if err := f.Pending.Add(sp, e.raw); err != nil {
				return fmt.Errorf("async: rewriting bag state: %w", err)
			}
		}
	}
	if len(keep) > 0 {
		// Work remains: come back when it is expected to have progressed
		// rather than a whole round later, so that queued elements do not
		// leave freed slots idle.
		next := timers.Rearm(f.clock.Now(), f.nextRound(kb), pool.ExpectedLatency())
		f.Commit.Set(tp, next, beamtimers.WithOutputTimestamp(ts.ToTime()))
	}
	return nil
}

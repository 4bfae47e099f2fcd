package async

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
)

// batchFn is the DoFn for bounded input: a key's outputs are committed by an
// event-time timer at the end of the window, which fires once the input is
// exhausted. It is the one commit path that runners which never fire
// processing-time timers in batch (Dataflow) deliver.
type batchFn struct {
	core
	// Pending holds every accepted element of a key (and window) until its
	// output is committed.
	Pending beamstate.Bag[[]byte]
	// Drain fires at the end of the window.
	Drain beamtimers.EventTime
}

// ProcessElement accepts one element and sets the key's drain timer.
func (f *batchFn) ProcessElement(ctx context.Context, w beam.Window, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, value beam.Y, _ func(beam.Z), _ func(Failure)) error {
	f.noWait = true // every commit comes at the end: waiting cannot gain room
	if _, err := f.accept(ctx, ts, &f.Pending, sp, key, value); err != nil {
		return err
	}
	f.Drain.Set(tp, w.MaxTimestamp().ToTime(), beamtimers.WithOutputTimestamp(ts.ToTime()))
	return nil
}

// OnTimer drains the key.
func (f *batchFn) OnTimer(ctx context.Context, sp beamstate.Provider, _ beamtimers.Provider, key beam.X, timer beamtimers.Context, emit func(beam.Z), fail func(Failure)) error {
	if timer.Family != drainFamily {
		return fmt.Errorf("async: timer of unknown family %q", timer.Family)
	}
	return f.drain(ctx, sp, key, emit, fail)
}

// drain commits everything the key holds, blocking until it is done. It runs
// when the window ends (for bounded input: once the input is exhausted), which
// is the only callback a runner that ignores processing-time timers in batch
// will deliver. Elements are started outside the buffer, at most Buffer at a
// time, and each result is emitted as soon as it finishes. A retry waits in
// the callback for its backoff without holding a pool slot; its attempt count
// is kept in memory until the drain ends (the drain commits the key's state
// in one step, so a failed drain starts over from what bag state held).
func (f *batchFn) drain(ctx context.Context, sp beamstate.Provider, key any, emit func(beam.Z), fail func(Failure)) error {
	entries, _, err := f.readPending(&f.Pending, sp)
	if err != nil || len(entries) == 0 {
		return err
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

	byID := make(map[string]state.Envelope, len(entries))
	waiting := make([]state.Envelope, 0, len(entries)) // not started, in order
	for _, e := range entries {
		byID[e.env.ID] = e.env
		waiting = append(waiting, e.env)
	}
	finished := make(chan *state.Task, len(entries))
	active := 0
	// startDue starts waiting elements whose next attempt is due, up to the
	// window, and returns when the earliest of the others is due.
	startDue := func() (time.Time, error) {
		now := f.clock.Now()
		var later time.Time
		rest := waiting[:0]
		for _, env := range waiting {
			due := time.UnixMilli(env.NextAttemptMs)
			if active >= f.Buffer || (env.NextAttemptMs != 0 && due.After(now)) {
				if env.NextAttemptMs != 0 && due.After(now) && (later.IsZero() || due.Before(later)) {
					later = due
				}
				rest = append(rest, env)
				continue
			}
			k := state.TaskKey{Key: string(kb), ID: env.ID}
			t := pool.Lookup(k)
			if t == nil {
				value, err := decode(f.valDec, env.Value)
				if err != nil {
					return later, fmt.Errorf("async: decoding a value of key %v from bag state: %w", key, err)
				}
				if t, err = f.startUnbuffered(pool, k, key, value, env.Attempts+1); err != nil {
					return later, err
				}
			}
			t.Notify(finished)
			active++
		}
		waiting = rest
		return later, nil
	}
	for {
		later, err := startDue()
		if err != nil {
			return err
		}
		if active == 0 && len(waiting) == 0 {
			break
		}
		var wake <-chan time.Time
		if active == 0 && !later.IsZero() {
			timer := time.NewTimer(later.Sub(f.clock.Now()))
			wake = timer.C
			defer timer.Stop() // at most one per retry round; the loop is short
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("async: drain of key %v interrupted: %w", key, ctx.Err())
		case <-wake:
		case t := <-finished:
			active--
			outputs, callErr := t.Result()
			pool.Remove(t)
			if callErr == nil {
				for _, o := range outputs {
					emit(o)
				}
				continue
			}
			out, err := f.settle(ctx, key, kb, byID[t.Key.ID], t.StartedAt(), callErr)
			if err != nil {
				return err
			}
			if out.failure != nil {
				fail(*out.failure)
				continue
			}
			byID[t.Key.ID] = *out.retry
			waiting = append(waiting, *out.retry)
		}
	}
	if err := f.Pending.Clear(sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	return nil
}

package async

import (
	"context"
	"fmt"

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
	f.noWait = true       // every commit comes at the end: waiting cannot gain room
	f.retryLocally = true // nothing is written back to bag state before the drain
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
	f.retryLocally = true
	return f.drain(ctx, sp, key, emit, fail)
}

// drain commits everything the key holds, blocking until it is done. It runs
// when the window ends (for bounded input: once the input is exhausted), which
// is the only callback a runner that ignores processing-time timers in batch
// will deliver. Elements are started outside the buffer, at most Buffer at a
// time, and each result is emitted as soon as it finishes.
//
// Failed attempts are retried inside the pool (see Retry in package state),
// on a timer, holding no slot while they wait: the drain commits the key's
// state in one step at its end, so there is no earlier point at which a
// retry could be written back to bag state. Their count lives in memory
// until then; a worker that restarts before the drain commits starts the
// count over from what bag state holds.
func (f *batchFn) drain(ctx context.Context, sp beamstate.Provider, key any, emit func(beam.Z), fail func(Failure)) error {
	entries, _, err := f.readPending(ctx, &f.Pending, sp)
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
	f.cancelStale(ctx, pool, string(kb), entries)

	byID := make(map[string]state.Envelope, len(entries))
	finished := make(chan *state.Task, len(entries))
	next, active := 0, 0
	startMore := func() error {
		for ; next < len(entries) && active < f.Buffer; next++ {
			env := entries[next].env
			byID[env.ID] = env
			k := state.TaskKey{Key: string(kb), ID: env.ID}
			t := pool.Lookup(k)
			if t == nil {
				value, err := decode(f.valDec, env.Value)
				if err != nil {
					return fmt.Errorf("async: decoding a value of key %v from bag state: %w", key, err)
				}
				if t, err = f.startUnbuffered(ctx, pool, k, key, value, env.Attempts); err != nil {
					return err
				}
				f.metrics.rescheduled.Inc(ctx, 1)
			}
			t.Notify(finished)
			active++
		}
		return nil
	}
	if err := startMore(); err != nil {
		return err
	}
	for active > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("async: drain of key %v interrupted: %w", key, ctx.Err())
		case t := <-finished:
			active--
			pool.Remove(t)
			f.metrics.observeFinished(ctx, t, f.clock.Now())
			outputs, callErr := t.Result()
			if callErr == nil {
				for _, o := range outputs {
					emit(o)
				}
				f.metrics.committed.Inc(ctx, 1)
			} else if err := f.failFinally(ctx, key, kb, byID[t.Key.ID], t, callErr, fail); err != nil {
				return err
			}
			if err := startMore(); err != nil {
				return err
			}
		}
	}
	if err := f.Pending.Clear(sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	return nil
}

// failFinally settles an element whose local retries are over. A retry
// outcome is still possible for a task that was cancelled before it ran (a
// registry reset); the drain cannot wait for it, so it is failed as it is.
func (f *batchFn) failFinally(ctx context.Context, key any, kb []byte, env state.Envelope, t *state.Task, callErr error, fail func(Failure)) error {
	out, err := f.settle(ctx, key, kb, env, t, callErr)
	if err != nil {
		return err
	}
	if out.failure == nil {
		return fmt.Errorf("async: element %x of key %v was interrupted before the drain could finish it: %w", env.ID, key, callErr)
	}
	fail(*out.failure)
	f.metrics.failed.Inc(ctx, 1)
	return nil
}

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

func newBatchFn(c core) *batchFn {
	return &batchFn{core: c, Pending: beamstate.MakeBagState[[]byte](pendingStateID), Drain: beamtimers.InEventTime(drainFamily)}
}

func (f *batchFn) keyState(sp beamstate.Provider) keyState {
	return keyState{bag: &f.Pending, sp: sp}
}

// ProcessElement accepts one element and sets the key's drain timer.
func (f *batchFn) ProcessElement(ctx context.Context, w beam.Window, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, value beam.Y, _ func(beam.Z), _ func(Failure)) error {
	f.noWait = true       // every commit comes at the end: waiting cannot gain room
	f.retryLocally = true // nothing is written back to bag state before the drain
	if _, err := f.accept(ctx, ts, f.keyState(sp), key, value); err != nil {
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

// drainItem is one element of a key being drained.
type drainItem struct {
	env      state.Envelope
	value    any // decoded when needed
	priority int
	// done: the element is resolved; held: its successful task, waiting for
	// its turn to be emitted (WithOrdered).
	done bool
	held *state.Task
}

// drain commits everything the key holds, blocking until it is done. It runs
// when the window ends (for bounded input: once the input is exhausted), which
// is the only callback a runner that ignores processing-time timers in batch
// will deliver. Elements are started without taking the pool's places, at
// most Buffer in flight at a time (by priority, or in acceptance order when
// ordered), and each result is emitted as soon as it finishes, or with
// WithOrdered as soon as every earlier element of the key is resolved, with
// at most Held results in flight or held back.
//
// Failed attempts are retried inside the pool (see Retry in package state),
// on a timer, holding no slot while they wait: the drain commits the key's
// state in one step at its end, so there is no earlier point at which a
// retry could be written back to bag state. Their count lives in memory
// until then; a worker that restarts before the drain commits starts the
// count over from what bag state holds.
func (f *batchFn) drain(ctx context.Context, sp beamstate.Provider, key any, emit func(beam.Z), fail func(Failure)) error {
	ks := f.keyState(sp)
	entries, _, err := f.readPending(ctx, ks, key)
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
	f.cancelStale(ctx, pool, key, string(kb), entries)
	items, err := f.drainOrder(key, entries)
	if err != nil {
		return err
	}
	index := make(map[string]int, len(items))
	for i, it := range items {
		index[it.env.ID] = i
	}

	finished := make(chan *state.Task, len(items))
	next, active, held, emitted := 0, 0, 0, 0
	startMore := func() error {
		for ; next < len(items) && active < f.Buffer && active+held < f.Held; next++ {
			it := &items[next]
			k := state.TaskKey{Owner: string(kb), ID: it.env.ID}
			t := pool.Lookup(k)
			if t == nil {
				if it.value == nil {
					if it.value, err = decode(f.valDec, it.env.Value); err != nil {
						return fmt.Errorf("async: decoding a value of key %v from bag state: %w", key, err)
					}
				}
				el := element{k: k, id: it.env.ID, kb: kb, key: key, value: it.value, done: it.env.Attempts, priority: it.priority, fromState: true}
				if t, err = f.startUnbuffered(ctx, pool, el); err != nil {
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
			it := &items[index[t.Key.ID]]
			it.done = true
			if _, callErr := t.Result(); callErr != nil {
				if err := f.failFinally(ctx, key, kb, it.env, t, callErr, fail); err != nil {
					return err
				}
			} else if f.Ordered {
				it.held = t
				held++
			} else {
				f.emitCommitted(ctx, key, finishedEntry{t: t, env: it.env}, emit)
			}
			for ; f.Ordered && emitted < len(items) && items[emitted].done; emitted++ {
				if h := items[emitted].held; h != nil {
					f.emitCommitted(ctx, key, finishedEntry{t: h, env: items[emitted].env}, emit)
					items[emitted].held = nil
					held--
				}
			}
			if err := startMore(); err != nil {
				return err
			}
		}
	}
	f.publish(ctx)
	if err := ks.bag.Clear(ks.sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	return nil
}

// drainOrder lists the key's elements in the order the drain starts them:
// acceptance order with WithOrdered, else by priority. With a priority
// function, values are decoded up front to compute it (the slot queue uses
// it in both cases).
func (f *batchFn) drainOrder(key any, entries []pending) ([]drainItem, error) {
	if f.Ordered {
		sortBySeq(entries)
	}
	items := make([]drainItem, len(entries))
	for i, e := range entries {
		items[i].env = e.env
	}
	if f.PriorityFn == nil {
		return items, nil
	}
	for i := range items {
		value, err := decode(f.valDec, items[i].env.Value)
		if err != nil {
			return nil, fmt.Errorf("async: decoding a value of key %v from bag state: %w", key, err)
		}
		if items[i].priority, err = f.priority(value); err != nil {
			return nil, err
		}
		items[i].value = value
	}
	if !f.Ordered {
		byPriority(items, func(it drainItem) int { return it.priority })
	}
	return items, nil
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

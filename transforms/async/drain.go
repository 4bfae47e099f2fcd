package async

// The DoFn for bounded input in sliding windows (fixed windows take the
// bundle path, see rewindow.go): outputs
// must be emitted in their element's window, which only a callback of that
// key and window can do, so elements wait in bag state, are committed by
// the key's ProcessElement as they finish, and the rest by an event-time
// timer at the end of the window that drains the key.

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
)

// drainFamily names the event-time timer family of drainFn.
const drainFamily = "asyncDrain"

// drainFn runs bounded input in sliding windows. The end-of-window timer
// fires once the input is exhausted; it is the one callback that runners
// which never fire processing-time timers in batch (Dataflow) deliver.
type drainFn struct {
	core
	// Pending holds every accepted element of a key and window until its
	// output is committed.
	Pending beamstate.Bag[[]byte]
	// Queued holds the elements that found no room (see queuedStateID).
	Queued beamstate.Bag[[]byte]
	// Drain fires at the end of the window.
	Drain beamtimers.EventTime

	views views // this bundle's keys
}

// newDrainFn makes the DoFn. Retries wait in the worker: nothing is written
// back to bag state before the drain.
func newDrainFn(c core) *drainFn {
	c.RetryInWorker, c.QuietUntilDrain = true, true
	return &drainFn{core: c, Pending: beamstate.MakeBagState[[]byte](pendingStateID), Queued: beamstate.MakeBagState[[]byte](queuedStateID),
		Drain: beamtimers.InEventTime(drainFamily)}
}

// StartBundle forgets the last bundle's view of its keys. Its
// ProcessElement never waits for room: every commit that could free some
// comes from this bundle's own keys.
func (f *drainFn) StartBundle(_ context.Context, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure)) {
	f.views = views{}
}

// ProcessElement commits the key and window's finished elements at its
// first touch in the bundle, accepts the element, and sets the drain.
func (f *drainFn) ProcessElement(ctx context.Context, w beam.Window, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, value beam.Y, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	_, v, err := f.takeElement(ctx, &f.Pending, &f.Queued, &f.views, sp, w, ts, key, value, false, emit, fail)
	if err != nil {
		return err
	}
	if !v.empty() {
		f.Drain.Set(tp, w.MaxTimestamp().ToTime(), beamtimers.WithOutputTimestamp(v.hold()))
	}
	return nil
}

// OnTimer drains the key and window.
func (f *drainFn) OnTimer(ctx context.Context, w beam.Window, sp beamstate.Provider, _ beamtimers.Provider, key beam.X, timer beamtimers.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	if timer.Family != drainFamily {
		return fmt.Errorf("async: timer of unknown family %q", timer.Family)
	}
	ks, pool, v, err := f.openKey(ctx, &f.Pending, &f.Queued, &f.views, sp, key, w, false)
	if err != nil {
		return err
	}
	if err := f.readQueue(ctx, ks, v); err != nil {
		return err
	}
	if err := f.drain(ctx, pool, v, append(v.entries, v.queued...), emit, fail); err != nil {
		return err
	}
	v.keep(nil)
	v.dequeue(nil)
	return v.write(ks)
}

// drainItem is one element of a key being drained.
type drainItem struct {
	p        *pending
	value    any // decoded when needed
	priority int
	// done: the element is resolved; held: its successful task, waiting for
	// its turn to be emitted (WithOrdered).
	done bool
	held *state.Task
}

// drain commits everything the key and window hold, blocking until it is
// done: the input is exhausted, so no later callback of the key would come.
// Elements are started without taking the pool's places, at most Buffer in
// flight at a time (by priority, or in acceptance order when ordered), and
// each result is emitted as soon as it finishes, or with WithOrdered as soon
// as every earlier element of the key is resolved, with at most Held results
// in flight or held back.
//
// Failed attempts are retried inside the pool (see Retry in package state),
// on a timer, holding no slot while they wait: the drain commits the key's
// state in one step at its end, so there is no earlier point at which a
// retry could be written back to bag state. Their count lives in memory
// until then; a worker that restarts before the drain commits starts the
// count over from what bag state holds.
func (f *drainFn) drain(ctx context.Context, pool *state.Pool, v *keyView, entries []*pending, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	if len(entries) == 0 {
		return nil
	}
	f.cancelStale(ctx, pool, v)
	items, err := f.drainOrder(v, entries)
	if err != nil {
		return err
	}
	d := &drainRun{f: f, pool: pool, v: v, items: items, index: make(map[string]int, len(items)), finished: make(chan *state.Task, len(items))}
	for i, it := range items {
		d.index[it.p.env.ID] = i
	}
	if err := d.startMore(ctx); err != nil {
		return err
	}
	// Long calls or backoffs touch the key now and then, so that the pool
	// does not take it for a key gone from this worker and evict its work.
	alive := time.NewTicker(f.staleAfter() / 4)
	defer alive.Stop()
	for d.active > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("async: drain of key %v interrupted: %w", v.key, ctx.Err())
		case <-alive.C:
			pool.Touch(v.owner, false)
		case t := <-d.finished:
			if err := d.finish(ctx, t, emit, fail); err != nil {
				return err
			}
			if err := d.startMore(ctx); err != nil {
				return err
			}
		}
	}
	f.publish(ctx)
	return nil
}

// drainRun is one drain of a key and window in progress.
type drainRun struct {
	f        *drainFn
	pool     *state.Pool
	v        *keyView
	items    []drainItem    // in the order they start
	index    map[string]int // element ID to its place in items
	finished chan *state.Task
	// next is the first item not started; active counts items started and
	// not finished, held the successes held back for order, and emitted the
	// items resolved in order (WithOrdered).
	next, active, held, emitted int
}

// startMore starts items while fewer than Buffer run and fewer than Held
// run or wait to be emitted.
func (d *drainRun) startMore(ctx context.Context) error {
	f := d.f
	for ; d.next < len(d.items) && d.active < f.Buffer && d.active+d.held < f.Held; d.next++ {
		it := &d.items[d.next]
		t := d.pool.Lookup(state.TaskKey{Owner: d.v.owner, ID: it.p.env.ID})
		if t == nil {
			if it.value == nil {
				value, err := f.decodeValue(d.v.key, it.p.env.Value)
				if err != nil {
					return err
				}
				it.value = value
			}
			var err error
			if t, err = f.startUnbuffered(ctx, d.pool, f.fromState(d.v, it.p, it.value, it.priority)); err != nil {
				return err
			}
			f.metrics.rescheduled.Inc(ctx, 1)
		}
		t.Notify(d.finished)
		d.active++
	}
	return nil
}

// finish resolves the finished task t: a final failure is written, a
// success emitted, or with WithOrdered held until every earlier item is
// resolved.
func (d *drainRun) finish(ctx context.Context, t *state.Task, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	f := d.f
	d.active--
	d.pool.Remove(t)
	f.metrics.observeFinished(ctx, t, f.clock.Now())
	it := &d.items[d.index[t.Key.ID]]
	it.done = true
	if outputs, callErr := t.Result(); callErr != nil {
		if err := f.failFinally(ctx, d.v, it.p, t, callErr, fail); err != nil {
			return err
		}
	} else if f.Ordered {
		it.held = t
		d.held++
	} else {
		f.emitDrained(ctx, d.v, it.p, t, outputs, emit)
	}
	for ; f.Ordered && d.emitted < len(d.items) && d.items[d.emitted].done; d.emitted++ {
		if h := d.items[d.emitted].held; h != nil {
			outputs, _ := h.Result()
			f.emitDrained(ctx, d.v, d.items[d.emitted].p, h, outputs, emit)
			d.items[d.emitted].held = nil
			d.held--
		}
	}
	return nil
}

// emitDrained emits one drained element's outputs with its timestamp.
func (f *drainFn) emitDrained(ctx context.Context, v *keyView, p *pending, t *state.Task, outputs []any, emit func(beam.EventTime, beam.Z)) {
	emitAt(p.env.EventTimeMs, outputs, emit)
	f.metrics.committed.Inc(ctx, 1)
	f.event(EventCommitted, v.key, p.env.ID, p.env.Attempts+t.Attempts(), nil)
}

// drainOrder lists the key's elements in the order the drain starts them:
// acceptance order with WithOrdered, else by priority. With a priority
// function, values are decoded up front to compute it (the slot queue uses
// it in both cases).
func (f *drainFn) drainOrder(v *keyView, entries []*pending) ([]drainItem, error) {
	if f.Ordered {
		entries = inOrder(entries)
	}
	items := make([]drainItem, len(entries))
	for i, p := range entries {
		items[i].p = p
	}
	if f.PriorityFn == nil {
		return items, nil
	}
	for i := range items {
		value, err := f.decodeValue(v.key, items[i].p.env.Value)
		if err != nil {
			return nil, err
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
// registry reset); the drain cannot wait for it, so it fails the drain, which
// the runner retries.
func (f *drainFn) failFinally(ctx context.Context, v *keyView, p *pending, t *state.Task, callErr error, fail func(beam.EventTime, Failure)) error {
	if t.Interrupted() { // evicted or cancelled, not failed: the bundle is retried
		return fmt.Errorf("async: element %x of key %v was interrupted before the drain could finish it: %w", p.env.ID, v.key, callErr)
	}
	out, err := f.settle(v.key, v.kb, p.env, t, callErr)
	if err != nil {
		return err
	}
	if out.failure == nil {
		return fmt.Errorf("async: element %x of key %v was interrupted before the drain could finish it: %w", p.env.ID, v.key, callErr)
	}
	fail(beam.EventTime(p.env.EventTimeMs), *out.failure)
	f.metrics.failed.Inc(ctx, 1)
	return nil
}

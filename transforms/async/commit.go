package async

// The exactly-once step of the stateful DoFn: a callback that holds a key's
// state emits the outputs of its finished elements and removes them from the
// bag in the same bundle, which the runner commits whole.

import (
	"context"
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
)

// commitResult is what a commit leaves for the key's next callback.
type commitResult struct {
	queued         int       // elements waiting in bag state for room
	waitingRetries int       // elements waiting out their backoff
	heldBack       int       // finished results kept behind an earlier element (WithOrdered)
	dueNext        time.Time // when the first of those is due (zero: none)
	// running counts the key's elements whose calls are running here, and
	// shortestRun is how long the most recent of those calls has run (see
	// timers.Cadence.LongCallWait).
	running     int
	shortestRun time.Duration
}

// commit settles every finished element of the view's key: outputs of
// successes are emitted with their elements' timestamps and windows (and,
// with WithOrdered, only once every earlier element of the key is resolved),
// final failures go to the failure output, failed attempts to retry are
// written back with their attempt count and due time, holding no pool slot.
// Then it starts, room permitting, the elements that this worker does not
// run: written by another worker or before a restart, left for want of room,
// or retries now due, and then queued elements. With WithOrdered the key's
// earliest element starts even without a place (see startFromState). A
// timer's commit (timer) also cancels the key's local work for elements no
// longer pending (see cancelStale). A key left with elements that wait for
// room waits for a place in the pool's turn (state.Pool.Waiting): a place
// freed meanwhile is kept for it, in its turn, until its next callback. The
// caller writes the view back (keyView.write) in the same callback.
func (f *core) commit(ctx context.Context, pool *state.Pool, ks keyState, v *keyView, timer bool, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) (commitResult, error) {
	if timer {
		f.cancelStale(ctx, pool, v)
	}
	scan, err := f.settleFinished(ctx, pool, v, emit, fail)
	if err != nil {
		return scan.res, err
	}
	res := scan.res
	if scan.changed {
		v.keep(scan.keep)
	}
	queued, err := f.startFromState(ctx, pool, v, scan.keep, scan.toStart)
	if err != nil {
		return res, err
	}
	if queued == 0 && v.queue.Count > 0 {
		if err := f.startQueued(ctx, pool, ks, v, f.Ordered && len(scan.keep) == 0); err != nil {
			return res, err
		}
	}
	res.queued = queued + int(v.queue.Count)
	pool.Waiting(v.owner, res.queued > 0)
	f.metrics.inFlight.Set(ctx, int64(pool.Len()))
	f.metrics.queued.Set(ctx, int64(queued+res.waitingRetries))
	f.publish(ctx, pool)
	return res, nil
}

// commitScan is what settleFinished found in a key's pending elements.
type commitScan struct {
	res     commitResult
	keep    []*pending // still pending after this commit, in order
	toStart []*pending // pending elements this worker does not run, due now
	changed bool       // some element left the bag, or was rewritten
}

// settleFinished resolves each finished element of the key, in acceptance
// order with WithOrdered: a success is emitted (with WithOrdered only when
// no earlier element is unresolved), a failure is settled. It sorts the
// others into those that run here and those this worker must start.
func (f *core) settleFinished(ctx context.Context, pool *state.Pool, v *keyView, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) (commitScan, error) {
	entries := v.entries
	if f.Ordered {
		entries = inOrder(v.entries)
	}
	now := f.clock.Now()
	var scan commitScan
	blocked := false // an earlier element of the key is unresolved (WithOrdered)
	for _, p := range entries {
		t := pool.Lookup(state.TaskKey{Owner: v.owner, ID: p.env.TaskID()})
		if t != nil && t.Interrupted() { // closed under us (a reset): not an attempt of the element
			pool.Remove(t)
			t = nil
		}
		switch {
		case t == nil:
			if due := time.UnixMilli(p.env.NextAttemptMs); p.env.NextAttemptMs != 0 && due.After(now) {
				scan.res.dueNext = earliest(scan.res.dueNext, due)
				scan.res.waitingRetries++
			} else {
				scan.toStart = append(scan.toStart, p)
			}
			scan.keep = append(scan.keep, p)
			blocked = true
		case t.Status() != state.Finished:
			f.metrics.observeRunning(ctx, t)
			if ran := t.RunningFor(); ran > 0 {
				if scan.res.running == 0 || ran < scan.res.shortestRun {
					scan.res.shortestRun = ran
				}
				scan.res.running++
			}
			scan.keep = append(scan.keep, p)
			blocked = true
		default:
			if _, callErr := t.Result(); callErr == nil && f.Ordered && blocked {
				scan.keep = append(scan.keep, p) // its turn comes after the earlier ones
				scan.res.heldBack++
				continue
			}
			scan.changed = true
			retry, err := f.resolve(ctx, pool, v, p, t, now, emit, fail)
			if err != nil {
				return scan, err
			}
			if retry == nil { // committed: emitted, or failed for good
				continue
			}
			scan.keep = append(scan.keep, retry)
			scan.res.waitingRetries++
			scan.res.dueNext = earliest(scan.res.dueNext, time.UnixMilli(retry.env.NextAttemptMs))
			blocked = true
		}
	}
	return scan, nil
}

// resolve commits the finished task t of pending element p: its outputs, or
// its final failure; or, for a failed attempt to be retried, returns the
// element to write back with its attempt count and due time.
func (f *core) resolve(ctx context.Context, pool *state.Pool, v *keyView, p *pending, t *state.Task, now time.Time, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) (*pending, error) {
	outputs, callErr := t.Result()
	// Forget the task either way: a retry starts a new one, and if this
	// callback fails the retried callback runs it again.
	pool.Remove(t)
	f.metrics.observeFinished(ctx, t, now)
	if callErr == nil {
		if err := f.emitOutputs(p.env.EventTimeMs, p.env.Window, outputs, emit); err != nil {
			return nil, err
		}
		f.metrics.committed.Inc(ctx, 1)
		f.event(EventCommitted, v.key, p.env.ID, p.env.Attempts+t.Attempts(), nil)
		return nil, nil
	}
	out, err := f.settle(v.key, v.kb, p.env, t, callErr)
	if err != nil {
		return nil, err
	}
	if out.failure != nil {
		fail(beam.EventTime(p.env.EventTimeMs), *out.failure)
		f.metrics.failed.Inc(ctx, 1)
		return nil, nil
	}
	f.metrics.retried.Inc(ctx, 1)
	return &pending{raw: out.retry.Encode(), env: *out.retry}, nil
}

// startFromState starts what this worker does not run, now that committed
// elements have freed their places: by priority, or in acceptance order when
// ordered. Without room an element stays queued in bag state for a later
// callback (queued counts those); but with WithOrdered the key's earliest
// pending element (keep[0]) starts even without a place, since the key's
// held results wait for it.
func (f *core) startFromState(ctx context.Context, pool *state.Pool, v *keyView, keep, toStart []*pending) (queued int, err error) {
	items := make([]startItem, 0, len(toStart))
	for _, p := range toStart {
		value, err := f.decodeValue(v.key, p.env.Value)
		if err != nil {
			return 0, err
		}
		prio, err := f.priority(value)
		if err != nil {
			return 0, err
		}
		items = append(items, startItem{p: p, value: value, priority: prio})
	}
	head := ""
	switch {
	case f.Ordered && len(keep) > 0:
		head = keep[0].env.Identity()
	case !f.Ordered:
		byPriority(items, func(it startItem) int { return it.priority })
	}
	for _, it := range items {
		el := f.fromState(v, it.p, it.value, it.priority)
		_, adm, err := f.submit(ctx, pool, el, 0)
		if err != nil {
			return 0, err
		}
		if adm == state.NoRoom && it.p.env.Identity() == head {
			if _, err := f.startHead(ctx, pool, el); err != nil {
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

// startHead starts an ordered key's earliest pending element without a
// place. The key keeps one such task: one left running for a later element
// by a callback that failed after committing this one (its commit rolled
// back, so this element is pending again) is cancelled. Its element is
// still in bag state (pending or queued) and starts again in its turn, with
// EventRescheduled, so nothing is reported here: the listener keeps its
// record (EventCancelled would end it). A task of an element committed on
// another worker is cancelled too, as cancelStale would.
func (f *core) startHead(ctx context.Context, pool *state.Pool, el element) (*state.Task, error) {
	pool.DisplaceUnbuffered(el.k)
	return f.startUnbuffered(ctx, pool, el)
}

// startQueued starts queued elements while there is room, in their order
// (by priority, else as queued; with WithOrdered in acceptance order) and
// moves them to the pending elements. With head, the first starts even
// without a place: it is the key's earliest element (WithOrdered), which the
// key's held results wait for. The queue bag is read only if an element can
// start: a place is kept for the key (see commit) or free.
func (f *core) startQueued(ctx context.Context, pool *state.Pool, ks keyState, v *keyView, head bool) error {
	if !head && !pool.HasRoom(v.owner) && (!f.evictIdle(ctx, pool) || !pool.HasRoom(v.owner)) {
		return nil
	}
	if err := f.readQueue(ctx, ks, v); err != nil {
		return err
	}
	items := make([]startItem, len(v.queued))
	for i, p := range v.queued {
		items[i].p = p
	}
	switch {
	case f.Ordered:
		sort.SliceStable(items, func(i, j int) bool { return items[i].p.env.Seq < items[j].p.env.Seq })
	case f.PriorityFn != nil:
		for i := range items {
			if err := f.decodeItem(v, &items[i]); err != nil {
				return err
			}
		}
		byPriority(items, func(it startItem) int { return it.priority })
	}
	started := 0
	for ; started < len(items); started++ {
		it := &items[started]
		if err := f.decodeItem(v, it); err != nil {
			return err
		}
		el := f.fromState(v, it.p, it.value, it.priority)
		_, adm, err := f.submit(ctx, pool, el, 0)
		if err != nil {
			return err
		}
		if adm == state.NoRoom && head && started == 0 {
			if _, err := f.startHead(ctx, pool, el); err != nil {
				return err
			}
			adm = state.Started
		}
		if adm == state.NoRoom {
			break
		}
		v.add(it.p)
		v.added = append(v.added, it.p.raw)
		f.metrics.rescheduled.Inc(ctx, 1)
	}
	if started > 0 || v.queueChanged {
		rest := make([]*pending, 0, len(items)-started)
		for _, it := range items[started:] {
			rest = append(rest, it.p)
		}
		v.dequeue(rest)
	}
	return nil
}

// decodeItem decodes an element's value and priority, once.
func (f *core) decodeItem(v *keyView, it *startItem) (err error) {
	if it.decoded {
		return nil
	}
	it.decoded = true
	if it.value, err = f.decodeValue(v.key, it.p.env.Value); err != nil {
		return err
	}
	it.priority, err = f.priority(it.value)
	return err
}

// fromState is the element of a bag entry of the view's key, to be started
// by a callback.
func (f *core) fromState(v *keyView, p *pending, value any, priority int) element {
	return element{k: state.TaskKey{Owner: v.owner, ID: p.env.TaskID()}, key: v.key, value: value, kb: v.kb, vb: p.env.Value,
		id: p.env.ID, window: p.env.Window, ts: beam.EventTime(p.env.EventTimeMs), done: p.env.Attempts, priority: priority, fromState: true,
		previous: previousError(p.env)}
}

// startItem is an element from bag state that a callback is about to start.
type startItem struct {
	p        *pending
	value    any
	priority int
	decoded  bool // value and priority are set
}

// earliest returns the earlier of a and b, where the zero time means unset.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// commitOnce commits the key at its first callback in this bundle (see
// commit for timer).
func (f *core) commitOnce(ctx context.Context, pool *state.Pool, ks keyState, v *keyView, timer bool, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	if v.committed {
		return nil
	}
	v.committed = true
	res, err := f.commit(ctx, pool, ks, v, timer, emit, fail)
	v.res = res
	return err
}

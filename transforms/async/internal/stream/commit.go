package stream

// The exactly-once step of a key's turn (keyTurn.commitOnce): a callback that
// holds a key's state emits the outputs of its finished elements and removes
// them from the bag in the same bundle, which the runner commits whole; then
// it starts what the worker does not run, as room allows.

import (
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// commit commits every finished element of the view's key: outputs of
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
// caller stores the view (keyTurn.store) in the same callback.
func (k *keyTurn) commit(timer bool) (commitResult, error) {
	f, v, ctx, pool := k.fn, k.v, k.ctx, k.pool
	if timer {
		k.cancelStale()
	}
	scan, err := k.scanFinished()
	if err != nil {
		return scan.res, err
	}
	res := scan.res
	if scan.changed {
		v.keep(scan.keep)
	}
	queued, err := k.startFromState(scan.keep, scan.toStart)
	if err != nil {
		return res, err
	}
	if queued == 0 && v.queue.Count > 0 {
		if err := k.startQueued(f.Ordered && len(scan.keep) == 0); err != nil {
			return res, err
		}
	}
	res.queued = queued + int(v.queue.Count)
	pool.Waiting(v.owner, res.queued > 0)
	f.Metrics().InFlight.Set(ctx, int64(pool.Len()))
	f.Metrics().Queued.Set(ctx, int64(queued+res.waitingRetries))
	f.Publish(ctx, pool)
	return res, nil
}

// commitScan is what scanFinished found in a key's pending elements.
type commitScan struct {
	res     commitResult
	keep    []*pending // still pending after this commit, in order
	toStart []*pending // pending elements this worker does not run, due now
	changed bool       // some element left the bag, or was rewritten
}

// scanFinished resolves each finished element of the key, in acceptance
// order with WithOrdered: a success is emitted (with WithOrdered only when
// no earlier element is unresolved), a failure is resolved. It sorts the
// others into those that run here and those this worker must start.
func (k *keyTurn) scanFinished() (commitScan, error) {
	f, v, ctx, pool := k.fn, k.v, k.ctx, k.pool
	entries := v.entries
	if f.Ordered {
		entries = inOrder(v.entries)
	}
	now := f.Clock().Now()
	var scan commitScan
	blocked := false // an earlier element of the key is unresolved (WithOrdered)
	for _, p := range entries {
		t := pool.Lookup(state.TaskKey{Owner: v.owner, Element: p.env.Element(v.owner)})
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
			f.Metrics().ObserveRunning(ctx, t)
			if t.Status() == state.Running {
				ran := t.RunningFor(now) // 0 for a call that started after now
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
				scan.res.waitingTurn++
				continue
			}
			scan.changed = true
			retry, err := k.commitTask(p, t)
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

// commitTask commits the finished task t of pending element p: its outputs,
// or its final failure; or, for a failed attempt to be retried, returns the
// element to write back with its attempt count and due time.
func (k *keyTurn) commitTask(p *pending, t *state.Task) (*pending, error) {
	f, v, ctx, pool := k.fn, k.v, k.ctx, k.pool
	outputs, callErr := t.Result()
	// Forget the task either way: a retry starts a new one, and if this
	// callback fails the retried callback runs it again.
	pool.Remove(t)
	f.Metrics().ObserveFinished(ctx, t)
	if callErr == nil {
		v.release(p.env)
		return nil, f.CommitOutputs(ctx, v.key, p.env.ID, p.env.EventTimeMs, p.env.Window, outputs, p.env.Attempts+t.Attempts(), t.FinishedAt(), k.emit)
	}
	out, err := f.AfterFailure(v.key, v.kb, p.env, t, callErr)
	if err != nil {
		return nil, err
	}
	if out.Failure != nil {
		v.release(p.env)
		k.fail(beam.EventTime(p.env.EventTimeMs), *out.Failure)
		f.Metrics().CountFailed(ctx)
		return nil, nil
	}
	return &pending{raw: out.Retry.Encode(), env: *out.Retry}, nil
}

// startFromState starts what this worker does not run, now that committed
// elements have freed their places: by priority, or in acceptance order when
// ordered. Without room an element stays queued in bag state for a later
// callback (queued counts those); but with WithOrdered the key's earliest
// pending element (keep[0]) starts even without a place, since the key's
// held results wait for it. A pending element with no retry due had
// started before, here or on another worker, and lost its work: it is
// rescheduled (element.rescheduled); a due retry is not.
func (k *keyTurn) startFromState(keep, toStart []*pending) (queued int, err error) {
	items := make([]startItem, len(toStart))
	for i, p := range toStart {
		items[i].p = p
		items[i].rescheduled = p.env.NextAttemptMs == 0
		if err := k.decodeItem(&items[i]); err != nil {
			return 0, err
		}
	}
	var head *pending // the key's earliest element (WithOrdered)
	switch {
	case k.fn.Ordered && len(keep) > 0:
		head = keep[0]
	case !k.fn.Ordered:
		worker.ByPriority(items, func(it startItem) int { return it.priority })
	}
	for i := range items {
		isHead := head != nil && items[i].p.env.Element(k.v.owner).Base() == head.env.Element(k.v.owner).Base()
		adm, err := k.startItem(&items[i], isHead)
		if err != nil {
			return 0, err
		}
		if adm != state.Started {
			queued++
		}
	}
	return queued, nil
}

// startQueued starts queued elements while there is room, in their order
// (by priority, else as queued; with WithOrdered in acceptance order) and
// moves them to the pending elements. With head, the first starts even
// without a place: it is the key's earliest element (WithOrdered), which the
// key's held results wait for. The queue bag is read only if an element can
// start: a place is kept for the key (see keyTurn.commit) or free.
func (k *keyTurn) startQueued(head bool) error {
	f, v, pool := k.fn, k.v, k.pool
	if !head && !pool.HasRoom(v.owner) && (!f.EvictIdle(k.ctx, pool) || !pool.HasRoom(v.owner)) {
		return nil
	}
	if err := f.readQueue(k.ctx, k.bags, v); err != nil {
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
			if err := k.decodeItem(&items[i]); err != nil {
				return err
			}
		}
		worker.ByPriority(items, func(it startItem) int { return it.priority })
	}
	started := 0
	for ; started < len(items); started++ {
		it := &items[started]
		if err := k.decodeItem(it); err != nil {
			return err
		}
		adm, err := k.startItem(it, head && started == 0)
		if err != nil {
			return err
		}
		if adm == state.NoRoom {
			break
		}
		v.add(it.p)
		v.added = append(v.added, it.p.raw)
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

// startItem submits a decoded element from the key's bags without waiting
// for room (room comes from commits, and this callback is one). An ordered
// key's earliest element (head) starts even without a place (see startHead).
func (k *keyTurn) startItem(it *startItem, head bool) (state.Admission, error) {
	el := k.fromState(it)
	_, adm, err := k.fn.Submit(k.ctx, k.pool, el, 0)
	if err != nil {
		return adm, err
	}
	if adm == state.NoRoom && head {
		if _, err := k.startHead(el); err != nil {
			return adm, err
		}
		adm = state.Started
	}
	return adm, nil
}

// startHead starts an ordered key's earliest pending element without a
// place. The key keeps one such task: one left running for a later element
// by a callback that failed after committing this one (its commit rolled
// back, so this element is pending again) is cancelled. Its element is
// still in bag state (pending or queued) and starts again in its turn
// (pending, with EventRescheduled), so nothing is reported here: the
// listener keeps its record (EventCancelled would end it). A task of an element committed on
// another worker is cancelled too, as cancelStale would.
func (k *keyTurn) startHead(el worker.Element) (*state.Task, error) {
	k.pool.DisplaceUnbuffered(el.Task())
	return k.fn.StartUnbuffered(k.ctx, k.pool, el)
}

// decodeItem decodes an element's value and priority, once.
func (k *keyTurn) decodeItem(it *startItem) (err error) {
	if it.decoded {
		return nil
	}
	it.decoded = true
	if it.value, err = k.fn.DecodeValue(k.v.key, it.p.env.Value); err != nil {
		return err
	}
	it.priority, err = k.fn.Priority(it.value)
	return err
}

// fromState is the element of a decoded bag entry of the key, to be started
// by a callback.
func (k *keyTurn) fromState(it *startItem) worker.Element {
	v, env := k.v, it.p.env
	return worker.Element{ID: env.Element(v.owner), Owner: v.owner, Key: v.key, Value: it.value, ValueBytes: env.Value,
		Timestamp: beam.EventTime(env.EventTimeMs), Done: env.Attempts, Priority: it.priority, Rescheduled: it.rescheduled,
		Previous: worker.PreviousError(env)}
}

// startItem is an element from bag state that a callback is about to start.
type startItem struct {
	p           *pending
	value       any
	priority    int
	decoded     bool // value and priority are set
	rescheduled bool // see element.rescheduled
}

// cancelStale removes the key's local tasks whose element is not pending:
// committed elsewhere (a key that moved between workers and back), or
// started by a bundle that failed and was not retried here. Only the key's
// timer calls it: a ProcessElement may belong to the retry of a failed
// bundle, whose elements are about to be accepted again and should find
// their calls running (see acceptedID).
func (k *keyTurn) cancelStale() {
	tasks := k.pool.ForOwner(k.v.owner)
	if len(tasks) == 0 {
		return
	}
	pending := make(map[state.ElementID]bool, len(k.v.entries))
	for _, p := range k.v.entries {
		pending[p.env.Element(k.v.owner)] = true
	}
	for _, t := range tasks {
		if !pending[t.Key.Element] {
			k.pool.Remove(t)
			k.fn.Metrics().Cancelled.Inc(k.ctx, 1)
			k.fn.Event(terms.EventCancelled, k.v.key, t.Key.Element.ID, t.Attempts(), nil)
		}
	}
}

// earliest returns the earlier of a and b, where the zero time means unset.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// commitOnce commits the key's finished elements and starts what can start (see
// commit): at the key's first callback in a bundle, and at its timer
// (timer) even after a ProcessElement of the bundle did; a timer also
// cancels the key's local work for elements no longer pending (cancelStale).
// What it leaves (commitResult) is what plan reads.
func (k *keyTurn) commitOnce(timer bool) error {
	if k.v.committed && !timer {
		return nil
	}
	k.v.committed = true
	res, err := k.commit(timer)
	k.v.res = res
	return err
}

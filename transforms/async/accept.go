package async

// How an element enters the stateful DoFn: ProcessElement's steps up to its
// timer (takeElement), its ID (acceptedID), and the decision to start it now
// or queue it in bag state (accept).

import (
	"context"
	"encoding/binary"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"

	"github.com/asyncbeam/asyncbeam/state"
)

// takeElement is the stateful DoFn's ProcessElement up to its timer: it opens
// the key, commits what has finished at the key's first touch in the bundle,
// accepts the element and writes the key's state.
func (f *core) takeElement(ctx context.Context, bag, queue *beamstate.Bag[[]byte], vs *views, sp beamstate.Provider, ts beam.EventTime,
	key, value any, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) (*state.Pool, *keyView, error) {
	ks, pool, v, err := f.openKey(ctx, bag, queue, vs, sp, key, true)
	if err != nil {
		return nil, nil, err
	}
	el, err := f.prepare(key, value, v.kb, ts)
	if err != nil {
		return nil, nil, err
	}
	// With WithIDFn, an element whose ID was pending when the bundle began is
	// one element with it.
	isCopy := f.IDFn != nil && v.byID[el.identity()] != nil
	if err := f.commitOnce(ctx, pool, ks, v, false, emit, fail); err != nil {
		return nil, nil, err
	}
	if err := f.accept(ctx, pool, vs, v, el, isCopy); err != nil {
		return nil, nil, err
	}
	return pool, v, v.write(ks)
}

// acceptedID is the ID of an element that its value identifies (no
// WithIDFn): its value's hash, its event time and its place in its key's
// order, seq. Two input records with equal values are two elements, and an
// element that a failed bundle accepted is accepted with the same ID and
// place by the bundle's retry (same state, same elements), which so finds
// its call running or finished on this worker and takes it over (see
// state.Envelope.TaskID).
func (f *core) acceptedID(el *element, seq int64) {
	if f.IDFn == nil {
		el.id = state.OccurrenceID(el.id+string(binary.AppendVarint(nil, int64(el.ts))), seq)
	}
}

// accept takes one element into the view's key, unless it is a copy of a
// pending element (isCopy, or started from the queue by this bundle's
// commit; only with WithIDFn can an element be a copy). It starts if there is
// room (see WithMaxItemsHeld, WithMaxWait) and nothing of its key is queued
// before it; otherwise it is queued, and its key waits for a place in the
// pool's turn (state.Pool.Waiting). Nothing is written until write.
func (f *core) accept(ctx context.Context, pool *state.Pool, vs *views, v *keyView, el element, isCopy bool) error {
	nonce, seq := v.nextSeq()
	f.acceptedID(&el, seq)
	f.metrics.accepted.Inc(ctx, 1)
	f.event(EventAccepted, el.key, el.id, 0, nil)
	if isCopy || v.byID[el.identity()] != nil {
		f.metrics.deduplicated.Inc(ctx, 1)
		f.event(EventDeduplicated, el.key, el.id, 0, nil)
		return nil
	}
	env := state.Envelope{ID: el.id, EventTimeMs: int64(el.ts), Value: el.vb, Seq: seq, Window: el.window, Nonce: nonce}
	p := &pending{raw: env.Encode(), env: env}
	if v.queue.Count > 0 { // behind its key's queue
		v.enqueue(p)
		pool.Waiting(v.owner, true)
		return nil
	}
	wait := vs.wait
	el.k = state.TaskKey{Owner: v.owner, ID: env.TaskID()}
	_, adm, err := f.submit(ctx, pool, el, wait)
	if err != nil {
		return err
	}
	if adm == state.NoRoom {
		vs.wait = 0
		v.enqueue(p)
		pool.Waiting(v.owner, true)
		return nil
	}
	v.add(p) // started, or Existing: a task for it runs already, and serves it
	v.added = append(v.added, p.raw)
	f.publish(ctx, pool)
	return nil
}

package async

// How an element enters the stateful DoFns: ProcessElement's common steps
// (takeElement), and the decision to start it now or queue it in bag state
// (accept).

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/asyncbeam/asyncbeam/state"
)

// takeElement is the ProcessElement of both stateful DoFns, up to their
// timer: it opens the key and window, commits what has finished at the
// key's first touch in the bundle (see commit for headFirst), accepts the
// element and writes the key's state.
func (f *core) takeElement(ctx context.Context, bag, queue *beamstate.Bag[[]byte], vs *views, sp beamstate.Provider, w typex.Window, ts beam.EventTime,
	key, value any, headFirst bool, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) (*state.Pool, *keyView, error) {
	ks, pool, v, err := f.openKey(ctx, bag, queue, vs, sp, key, w, true)
	if err != nil {
		return nil, nil, err
	}
	el, err := f.prepare(key, value, v.kb, ts)
	if err != nil {
		return nil, nil, err
	}
	isCopy := v.byID[el.id] != nil // pending when the bundle began: one element with it
	if err := f.commitOnce(ctx, pool, ks, v, headFirst, emit, fail); err != nil {
		return nil, nil, err
	}
	if err := f.accept(ctx, pool, vs, v, el, isCopy); err != nil {
		return nil, nil, err
	}
	return pool, v, v.write(ks)
}

// accept takes one element into the view's key and window, unless a copy of
// it was pending when the bundle began (isCopy: then it is one element with
// it). It starts if there is room (see WithMaxItemsHeld, WithMaxWait) and
// nothing of its key is queued before it; otherwise it is queued. Nothing is
// written until write.
func (f *core) accept(ctx context.Context, pool *state.Pool, vs *views, v *keyView, el element, isCopy bool) error {
	f.metrics.accepted.Inc(ctx, 1)
	f.event(EventAccepted, el.key, el.id, 0, nil)
	if isCopy || v.byID[el.id] != nil { // or started from the queue by this bundle's commit
		f.metrics.deduplicated.Inc(ctx, 1)
		f.event(EventDeduplicated, el.key, el.id, 0, nil)
		return nil
	}
	env := state.Envelope{ID: el.id, EventTimeMs: int64(el.ts), Value: el.vb}
	if f.Ordered {
		env.Seq = v.nextSeq()
	}
	p := &pending{raw: env.Encode(), env: env}
	if v.queue.Count > 0 { // behind its key's queue
		v.enqueue(p)
		return nil
	}
	wait := vs.wait
	el.k = state.TaskKey{Owner: v.owner, ID: el.id}
	_, adm, err := f.submit(ctx, pool, el, wait)
	if err != nil {
		return err
	}
	if adm == state.NoRoom {
		vs.wait = 0
		v.enqueue(p)
		return nil
	}
	v.add(p) // started, or Existing: a task for it runs already, and serves it
	v.added = append(v.added, p.raw)
	f.publish(ctx)
	return nil
}

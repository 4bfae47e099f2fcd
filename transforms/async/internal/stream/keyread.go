package stream

// Reading a key's bags at the bundle's first touch of the key: the pending
// bag always, the queue bag only when a queued element can start.

import (
	"context"
	"fmt"

	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// view returns the bundle's view of key, reading the pending bag on the
// bundle's first touch (which also shows the pool the key is alive here).
func (f *Path) view(ctx context.Context, pool *state.Pool, vs *views, ks keyState, key any, element bool) (*keyView, error) {
	kb, err := f.EncodeKey(key)
	if err != nil {
		return nil, fmt.Errorf("async: encoding key %v: %w", key, err)
	}
	owner := string(kb)
	if v := vs.byOwner[owner]; v != nil {
		if element && !v.arrived {
			// The bundle's first touch of the key was its timer: its first
			// element is an arrival all the same.
			_, v.arrivals = pool.Touch(owner, true)
			v.arrived = true
		}
		return v, nil
	}
	v := &keyView{owner: owner, key: key, kb: kb, byID: map[state.ElementID]*pending{}, arrived: element, escrowing: f.Drain}
	before, after := pool.Touch(owner, element)
	v.seen, v.arrivals = before.Last, after
	v.plan, v.planned = pool.Pace().InForce(owner)
	if err := f.readPending(ctx, ks, v); err != nil {
		return nil, err
	}
	vs.byOwner[owner] = v
	return v, nil
}

// readPending reads the key's pending bag into a new view, which marks the
// bag for a rewrite if it holds copies.
func (f *Path) readPending(ctx context.Context, ks keyState, v *keyView) error {
	copies, err := f.readBag(ctx, ks.bag, ks.sp, v, v.add)
	v.changed = copies
	return err
}

// readBag reads one of the key's bags, handing each element to keep. Of
// several entries of one identity the first is kept (a later one with more
// attempts replaces it: a retry written back); the others are copies,
// counted as deduplicated. The current queue summary goes to v. It reports
// whether the bag held more than keep was given: copies, or an entry
// replaced, so that the bag is rewritten.
func (f *Path) readBag(ctx context.Context, bag *beamstate.Bag[[]byte], sp beamstate.Provider, v *keyView, keep func(*pending)) (copies bool, err error) {
	raws, _, err := bag.Read(sp)
	if err != nil {
		return false, fmt.Errorf("async: reading bag state: %w", err)
	}
	seen := map[state.ElementID]*pending{}
	for _, raw := range raws {
		entry, err := state.DecodeEntry(raw)
		if err != nil {
			return copies, fmt.Errorf("async: bag state %q holds an entry this version cannot read: %w", bag.Key, err)
		}
		if q := entry.Summary; q != nil {
			if q.Serial >= v.queue.Serial {
				v.queue = *q
			}
			v.maxSeq = max(v.maxSeq, q.HighSeq)
			if v.nonce == 0 {
				v.nonce = q.Nonce
			}
			v.summaries++
		}
		for i, env := range entry.Envelopes {
			p := &pending{raw: entry.Raws[i], env: env}
			id := env.Element(v.owner).Base()
			if old := seen[id]; old != nil || v.byID[id] != nil {
				if old != nil && env.Attempts > old.env.Attempts {
					v.releaseCopy(old.env, env)
					*old = *p
				} else {
					kept := old
					if kept == nil {
						kept = v.byID[id]
					}
					v.releaseCopy(env, kept.env)
					f.Metrics().Deduplicated.Inc(ctx, 1)
					f.Event(terms.EventDeduplicated, v.key, env.ID, 0, nil)
				}
				copies = true
				continue
			}
			seen[id] = p
			keep(p)
		}
	}
	return copies, nil
}

// readQueue reads the queued elements, once per bundle, with those this
// bundle queued and has not written yet. Copies of elements already pending
// or queued are dropped (the queue bag is then rewritten).
func (f *Path) readQueue(ctx context.Context, ks keyState, v *keyView) error {
	if v.queueRead {
		return nil
	}
	v.queueRead = true
	dropped := false
	ids := map[state.ElementID]*pending{}
	keep := func(p *pending) {
		id := p.env.Element(v.owner).Base()
		if kept := ids[id]; kept != nil || v.byID[id] != nil {
			if kept == nil {
				kept = v.byID[id]
			}
			v.releaseCopy(p.env, kept.env)
			f.Metrics().Deduplicated.Inc(ctx, 1)
			f.Event(terms.EventDeduplicated, v.key, p.env.ID, 0, nil)
			dropped = true
			return
		}
		ids[id] = p
		v.queued = append(v.queued, p)
	}
	copies, err := f.readBag(ctx, ks.queue, ks.sp, v, keep)
	for _, p := range v.toQueue {
		keep(p)
	}
	if copies || dropped || len(v.toQueue) > 0 {
		v.queueChanged = true // the bag lacks what was queued, or holds copies
	}
	v.toQueue = nil
	return err
}

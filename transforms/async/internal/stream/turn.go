package stream

// A key's lifecycle in one callback of the stateful DoFn (streamFn): every
// callback opens the key, commits what has finished, accepts its element (a
// ProcessElement), stores the changes in the key's bags and plans the key's
// timer, in that order. Path's ProcessElement and OnTimer are these steps;
// commit.go has what committing does, keyread.go and keywrite.go the bags'
// reads and writes.

import (
	"context"
	"encoding/binary"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/drain"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// keyTurn is one key in one callback: the key's bags (the state the
// callback may write), the transform's pool in this process, the bundle's
// view of the key, and the callback's outputs. It lives for one callback;
// the view lives for the bundle (Path.views).
type keyTurn struct {
	fn   *Path
	ctx  context.Context
	pool *state.Pool
	bags keyState
	v    *keyView
	emit func(beam.EventTime, beam.Z)
	fail func(beam.EventTime, terms.Failure)
	// escrow receives the drain's records (package drain); store sends them only
	// when the view is escrowing (WithEndOfInputDrain).
	escrow EscrowEmit
}

// open is every callback's first step (element: a ProcessElement): the
// bundle's view of the key, which reads its pending bag at the bundle's
// first touch of the key (see view).
func (f *Path) open(ctx context.Context, sp beamstate.Provider, key any, element bool, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure), escrow EscrowEmit) (*keyTurn, error) {
	pool, err := f.Pool()
	if err != nil {
		return nil, err
	}
	k := &keyTurn{fn: f, ctx: ctx, pool: pool, bags: keyState{bag: f.pending, queue: f.queued, sp: sp}, emit: emit, fail: fail, escrow: escrow}
	if f.views.byOwner == nil {
		f.views.byOwner = map[string]*keyView{}
	}
	k.v, err = f.view(ctx, pool, &f.views, k.bags, key, element)
	return k, err
}

// fired records that the key's timer fired: it leaves no overrun for the
// pace (timers.Pace), whenever this bundle ends.
func (k *keyTurn) fired() {
	k.pool.Pace().Drop(k.v.owner)
	k.v.planned = false
}

// accept takes one element into the key, unless it is a copy of a pending
// element (isCopy: pending when the bundle began, or started from the queue
// by this bundle's commitOnce; only with WithIDFn can an element be a copy). It
// starts if there is room (see WithMaxItemsHeld, WithMaxWait) and nothing of
// its key is queued before it; otherwise it is queued, and its key waits for
// a place in the pool's turn (state.Pool.Waiting). Nothing is written until
// store.
func (k *keyTurn) accept(el worker.Element, isCopy bool) error {
	f, v, ctx := k.fn, k.v, k.ctx
	nonce, seq := v.nextSeq()
	f.acceptedID(&el, seq)
	f.Metrics().Accepted.Inc(ctx, 1)
	f.Event(terms.EventAccepted, el.Key, el.ID.ID, 0, nil)
	if isCopy || v.byID[el.ID.Base()] != nil {
		f.Metrics().Deduplicated.Inc(ctx, 1)
		f.Event(terms.EventDeduplicated, el.Key, el.ID.ID, 0, nil)
		return nil
	}
	env := state.Envelope{ID: el.ID.ID, EventTimeMs: int64(el.Timestamp), Value: el.ValueBytes, Seq: seq, Window: el.ID.Window, Nonce: nonce}
	p := &pending{raw: env.Encode(), env: env}
	v.escrow(p)
	if v.queue.Count > 0 { // behind its key's queue
		v.enqueue(p)
		k.pool.Waiting(v.owner, true)
		return nil
	}
	el.ID, el.Owner = env.Element(v.owner), v.owner
	_, adm, err := f.Submit(ctx, k.pool, el, f.views.wait)
	if err != nil {
		return err
	}
	if adm == state.NoRoom {
		f.views.wait = 0
		v.enqueue(p)
		k.pool.Waiting(v.owner, true)
		return nil
	}
	v.add(p) // started, or Existing: a task for it runs already, and serves it
	v.added = append(v.added, p.raw)
	f.Publish(ctx, k.pool)
	return nil
}

// acceptedID is the ID of an element that its value identifies (no
// WithIDFn): its value's hash, its event time and its place in its key's
// order, seq. Two input records with equal values are two elements, and an
// element that a failed bundle accepted is accepted with the same ID and
// place by the bundle's retry (same state, same elements), which so finds
// its call running or finished on this worker and takes it over (see
// state.ElementID).
func (f *Path) acceptedID(el *worker.Element, seq int64) {
	if f.IDFn == nil {
		el.ID.ID += string(binary.AppendVarint(nil, int64(el.Timestamp)))
		el.ID = el.ID.Occurrence(seq)
	}
}

// store writes the bundle's changes to the key's bags (keyView.write), and
// sends the callback's record of accepted and committed elements to the
// drain (package drain) with them, with the key's hold after the callback and
// the record's ordinal.
func (k *keyTurn) store() error {
	if err := k.v.write(k.bags); err != nil {
		return err
	}
	v := k.v
	if v.escrowing && (len(v.toEscrow) > 0 || len(v.released) > 0) {
		at := v.releasedMin
		if len(v.toEscrow) > 0 && (len(v.released) == 0 || v.escrowMin < at) {
			at = v.escrowMin
		}
		k.escrow(beam.EventTime(at), v.key, drain.EncodeRecord(drain.NextOrdinal(), v.hold(), v.toEscrow, v.released))
	}
	v.toEscrow, v.released = nil, nil
	return nil
}

// plan sets the key's timer while it has pending or queued elements, held
// at their earliest event time, for the instant timers.Cadence.Plan picks
// from what the key holds, the pool's load and the runner's pace. An empty
// key sets none, so that a bounded pipeline can end.
func (k *keyTurn) plan(tp beamtimers.Provider, element bool) {
	f, v, pool := k.fn, k.v, k.pool
	pace := pool.Pace()
	if v.empty() {
		pace.Drop(v.owner)
		return
	}
	now := f.Clock().Now()
	perWave := f.Parallelism
	if f.Batch != nil {
		perWave *= f.Batch.Size
	}
	facts := timers.Facts{
		Now:         now,
		AtElement:   element,
		Seen:        v.seen,
		Gaps:        v.arrivals.Gaps,
		Gap:         v.arrivals.Gap,
		MeanGap:     v.arrivals.MeanGap,
		Active:      len(v.entries) + int(v.queue.Count) - v.res.waitingRetries - v.res.waitingTurn,
		Queued:      max(v.res.queued, int(v.queue.Count)), // the commit's count, or more if this bundle queued since
		Running:     v.res.running,
		ShortestRun: v.res.shortestRun,
		RetryDue:    v.res.dueNext,
		Pool:        timers.Load{Expected: pool.ExpectedLatency(), Unfinished: pool.Unfinished(), Held: pool.Len(), Capacity: f.Held, PerWave: perWave},
		BundleAge:   now.Sub(f.views.began),
	}
	at := pace.Plan(f.Cadence(), v.owner, facts)
	if f.TimersSilenced() {
		return
	}
	f.commit.Set(tp, at, beamtimers.WithOutputTimestamp(v.outputTimestamp()))
}

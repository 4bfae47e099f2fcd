package async

// The end-of-input drain of the unbounded path. A runner may end a stream
// without firing the processing-time timers its keys still have: Flink's
// portable runner ignores them once the input watermark has passed the
// global window's end (runners-core's StatefulDoFnRunner), so the elements
// those keys held would never be committed. To lose none, streamFn writes,
// next to its outputs and in the same callback as the bag change, a record
// per key callback to a second keyed output: an escrow record with the
// elements it accepted, and a release record with those it committed
// (emitted, or failed for good). escrowFn, a second stateful DoFn keyed
// alike, keeps each key's escrowed elements minus its released ones, with
// an event-time timer near the global window's end (drainFiring) held at
// their earliest event time. The timer fires only once the input watermark has passed the
// end of time and streamFn's own holds are gone; what it finds then was
// never committed by streamFn and never will be, and it runs it the way the
// bounded path does (bundleFn), in the same bundle as the clearing of its
// state. On runners that fire streamFn's timers until its keys are empty
// (prism; Dataflow, as read) every escrow has been released by then and the
// timer finds nothing. Opt-in (WithEndOfInputDrain), for its cost.
//
// Two DoFns, not one with two timer families: Beam Go v2.77's harness can
// hang a bundle of a DoFn that declares two (see chooseDoFn).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
)

// Names of escrowFn's state and timer, as they appear in the job graph.
const (
	escrowedStateID = "asyncEscrowed"
	releasedStateID = "asyncReleased"
	drainFamily     = "asyncDrain"
)

// The kinds of record streamFn writes to escrowFn (the first byte).
const (
	recordEscrow  byte = 1 // then elements as one bag entry (oneEntry)
	recordRelease byte = 2 // then pairs of varints: nonce, seq
	// recordDrained, in escrowFn's Released bag only, names the elements
	// its drain ran (as recordRelease does): a release of one later means
	// the stream committed it too (see errDrainedTwice).
	recordDrained byte = 3
)

// escrowID names one element of a key: the incarnation of the key's state
// that accepted it and its place in that incarnation (state.Envelope).
type escrowID struct {
	Nonce uint64
	Seq   int64
}

func idOf(env state.Envelope) escrowID { return escrowID{Nonce: env.Nonce, Seq: env.Seq} }

// escrowRecord encodes the elements a callback accepted.
func escrowRecord(raws [][]byte) []byte {
	return append([]byte{recordEscrow}, oneEntry(raws)...)
}

// releaseRecord encodes the elements a callback committed.
func releaseRecord(ids []escrowID) []byte { return idsRecord(recordRelease, ids) }

// idsRecord encodes a record of kind that names elements.
func idsRecord(kind byte, ids []escrowID) []byte {
	b := []byte{kind}
	for _, id := range ids {
		b = binary.AppendUvarint(b, id.Nonce)
		b = binary.AppendVarint(b, id.Seq)
	}
	return b
}

// decodeRelease reads the ids of a release record's payload.
func decodeRelease(b []byte) ([]escrowID, error) {
	var ids []escrowID
	for len(b) > 0 {
		nonce, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("a release record is cut short")
		}
		seq, m := binary.Varint(b[n:])
		if m <= 0 {
			return nil, errors.New("a release record is cut short")
		}
		ids, b = append(ids, escrowID{nonce, seq}), b[n+m:]
	}
	return ids, nil
}

// escrowBook is one key's escrow state: the elements escrowed and not yet
// released, and the releases that came before their escrows (records of two
// callbacks may arrive in either order).
type escrowBook struct {
	held     []state.Envelope
	heldRaws [][]byte
	early    map[escrowID]bool
	heldIDs  map[escrowID]bool
	// drained are the elements a drain ran; drainedRaw is their record in
	// the Released bag.
	drained    map[escrowID]bool
	drainedRaw []byte
	changed    bool // held lost an element: rewrite it
	earlyMoot  bool // early changed: rewrite it
}

// escrow adds elements to the book, but not one already held (a copy) or
// already released (its release came first: both are then forgotten).
func (b *escrowBook) escrow(envs []state.Envelope, raws [][]byte) (added [][]byte) {
	for i, env := range envs {
		id := idOf(env)
		switch {
		case b.early[id]:
			delete(b.early, id)
			b.earlyMoot = true
		case !b.heldIDs[id]:
			b.heldIDs[id] = true
			b.held, b.heldRaws = append(b.held, env), append(b.heldRaws, raws[i])
			added = append(added, raws[i])
		}
	}
	return added
}

// release removes released elements from the book; one not held yet is
// kept as an early release, to cancel its escrow when that comes. A release
// of an element the drain ran is an error (errDrainedTwice).
func (b *escrowBook) release(ids []escrowID) error {
	gone := map[escrowID]bool{}
	for _, id := range ids {
		if b.drained[id] {
			return errDrainedTwice
		}
		if b.heldIDs[id] {
			gone[id] = true
			delete(b.heldIDs, id)
			continue
		}
		if !b.early[id] {
			b.early[id] = true
			b.earlyMoot = true
		}
	}
	if len(gone) == 0 {
		return nil
	}
	b.changed = true
	keep, keepRaws := b.held[:0], b.heldRaws[:0]
	for i, env := range b.held {
		if !gone[idOf(env)] {
			keep, keepRaws = append(keep, env), append(keepRaws, b.heldRaws[i])
		}
	}
	b.held, b.heldRaws = keep, keepRaws
	return nil
}

// errDrainedTwice fails the job rather than let it go on silently when the
// stream commits an element the drain ran: the runner fired the drain
// while the stream still had a timer pending, against the Beam model
// (timers hold the watermark at their output timestamps). Beam Python's
// FnApiRunner (apache-beam 2.77) holds a stage's watermark only at the
// timers its last bundle set.
var errDrainedTwice = errors.New("the end-of-input drain ran an element that the stream then committed as well, so its outputs were emitted twice: " +
	"this runner fired the drain's event-time timer while a processing-time timer of the stream was still pending, so it does not hold the watermark at the output timestamps of pending timers " +
	"(Beam Python's portable job service holds only those its last bundle set); run the transform without async.WithEndOfInputDrain() on this runner")

// earliest is the earliest event time of the held elements.
func (b *escrowBook) earliest() mtime.Time {
	first := mtime.MaxTimestamp
	for _, env := range b.held {
		first = min(first, mtime.Time(env.EventTimeMs))
	}
	return first
}

// escrowFn keeps, per key, the elements streamFn accepted and has not
// committed, and at the end of input runs those that remain (see the file's
// comment).
type escrowFn struct {
	bundleFn
	// Escrowed holds the key's escrowed elements, not yet released.
	Escrowed beamstate.Bag[[]byte]
	// Released holds releases that came before their escrow records.
	Released beamstate.Bag[[]byte]
	// Drain fires near the global window's end (drainFiring), held at the
	// earliest escrowed event time, and is cleared when nothing is
	// escrowed.
	Drain beamtimers.EventTime
}

func newEscrowFn(c core) *escrowFn {
	return &escrowFn{bundleFn: *newBundleFn(c), Escrowed: beamstate.MakeBagState[[]byte](escrowedStateID),
		Released: beamstate.MakeBagState[[]byte](releasedStateID), Drain: beamtimers.InEventTime(drainFamily)}
}

// StartBundle begins a bundle; only a drain runs anything in it.
func (f *escrowFn) StartBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.StartBundle(ctx, emit, fail)
}

// FinishBundle waits for what a drain in this bundle started, and emits it.
func (f *escrowFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.FinishBundle(ctx, emit, fail)
}

// ProcessElement applies one record of streamFn to the key's book and sets
// or clears the key's drain timer.
func (f *escrowFn) ProcessElement(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, rec []byte, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure)) error {
	if len(rec) == 0 {
		return fmt.Errorf("async: an empty escrow record for key %v", key)
	}
	b, err := f.read(sp)
	if err != nil {
		return err
	}
	var added [][]byte
	switch rec[0] {
	case recordEscrow:
		entry, err := state.DecodeEntry(rec[1:])
		if err != nil {
			return fmt.Errorf("async: an escrow record of key %v this version cannot read: %w", key, err)
		}
		added = b.escrow(entry.Envelopes, entry.Raws)
	case recordRelease:
		ids, err := decodeRelease(rec[1:])
		if err != nil {
			return fmt.Errorf("async: key %v: %w", key, err)
		}
		if err := b.release(ids); err != nil {
			return fmt.Errorf("async: key %v: %w", key, err)
		}
	default:
		return fmt.Errorf("async: an escrow record of key %v of unknown kind %d", key, rec[0])
	}
	return f.write(sp, tp, b, added)
}

// read reads the key's book.
func (f *escrowFn) read(sp beamstate.Provider) (*escrowBook, error) {
	b := newEscrowBook()
	raws, _, err := f.Escrowed.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("async: reading bag state: %w", err)
	}
	for _, raw := range raws {
		entry, err := state.DecodeEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("async: bag state %q holds an entry this version cannot read: %w", escrowedStateID, err)
		}
		b.escrow(entry.Envelopes, entry.Raws)
	}
	early, _, err := f.Released.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("async: reading bag state: %w", err)
	}
	for _, raw := range early {
		if len(raw) == 0 || (raw[0] != recordRelease && raw[0] != recordDrained) {
			return nil, fmt.Errorf("async: bag state %q holds an entry this version cannot read", releasedStateID)
		}
		ids, err := decodeRelease(raw[1:])
		if err != nil {
			return nil, fmt.Errorf("async: bag state %q: %w", releasedStateID, err)
		}
		into := b.early
		if raw[0] == recordDrained {
			into, b.drainedRaw = b.drained, raw
		}
		for _, id := range ids {
			into[id] = true
		}
	}
	return b, nil
}

func newEscrowBook() *escrowBook {
	return &escrowBook{early: map[escrowID]bool{}, heldIDs: map[escrowID]bool{}, drained: map[escrowID]bool{}}
}

// write stores the book's changes (added: escrowed by this record) and sets
// the drain timer at the global window's end, held at the earliest escrowed
// event time, or clears it when nothing is escrowed.
func (f *escrowFn) write(sp beamstate.Provider, tp beamtimers.Provider, b *escrowBook, added [][]byte) error {
	switch {
	case b.changed:
		if err := f.Escrowed.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
		if len(b.heldRaws) > 0 {
			if err := f.Escrowed.Add(sp, oneEntry(b.heldRaws)); err != nil {
				return fmt.Errorf("async: rewriting bag state: %w", err)
			}
		}
	case len(added) > 0:
		if err := f.Escrowed.Add(sp, oneEntry(added)); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
	}
	if b.earlyMoot {
		if err := f.Released.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
		if len(b.early) > 0 {
			ids := make([]escrowID, 0, len(b.early))
			for id := range b.early {
				ids = append(ids, id)
			}
			if err := f.Released.Add(sp, releaseRecord(ids)); err != nil {
				return fmt.Errorf("async: rewriting bag state: %w", err)
			}
		}
		if b.drainedRaw != nil {
			if err := f.Released.Add(sp, b.drainedRaw); err != nil {
				return fmt.Errorf("async: rewriting bag state: %w", err)
			}
		}
	}
	if !b.changed && len(added) == 0 {
		return nil // the hold is where it was
	}
	if len(b.held) == 0 {
		f.Drain.Clear(tp)
		return nil
	}
	hold := b.earliest()
	f.Drain.Set(tp, drainFiring(hold).ToTime(), beamtimers.WithOutputTimestamp(hold.ToTime()))
	return nil
}

// drainSpan is the width of the band below the global window's end where
// drain timers fire: 2^50 ms, some 35,000 years, so that the band starts
// far beyond any event time a watermark reaches before the end of input.
const drainSpan = int64(1) << 50

// drainFiring is when the drain timer held at hold fires: near the global
// window's end, at an instant that differs for each hold (for holds less
// than drainSpan apart). The watermark passes all of them only at the end
// of input. A firing that moved with its hold is needed on prism (v2.77):
// it takes a timer set again at the same instant with another hold for the
// earlier setting and releases the earlier hold twice, which fails its job.
func drainFiring(hold mtime.Time) mtime.Time {
	offset := ((int64(hold) % drainSpan) + drainSpan) % drainSpan
	return mtime.EndOfGlobalWindowTime - mtime.Time(drainSpan) + mtime.Time(offset)
}

// OnTimer is the end of input: the key's escrowed elements were never
// committed by streamFn, and never will be. They start here, in their key's
// acceptance order, and FinishBundle emits their outputs and failures in
// this bundle, which also clears the key's state.
func (f *escrowFn) OnTimer(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, timer beamtimers.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	if timer.Family != drainFamily {
		return fmt.Errorf("async: timer of unknown family %q", timer.Family)
	}
	b, err := f.read(sp)
	if err != nil {
		return err
	}
	// The drained elements stay named in the Released bag, which the
	// runner collects with the window: a release of one that comes later
	// fails the job (errDrainedTwice). Early releases are moot now.
	if err := f.Escrowed.Clear(sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	if err := f.Released.Clear(sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	if len(b.held) > 0 || b.drainedRaw != nil {
		ids := make([]escrowID, 0, len(b.held)+len(b.drained))
		for id := range b.drained {
			ids = append(ids, id)
		}
		for _, env := range b.held {
			ids = append(ids, idOf(env))
		}
		if err := f.Released.Add(sp, idsRecord(recordDrained, ids)); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
	}
	// At the end of input every release has arrived, so what is held is of
	// the key's last incarnation, whose order is its seq.
	held := b.held
	sort.Slice(held, func(i, j int) bool {
		if held[i].Nonce != held[j].Nonce {
			return held[i].Nonce < held[j].Nonce
		}
		return held[i].Seq < held[j].Seq
	})
	for _, env := range held {
		value, err := f.drainedValue(key, env)
		if err != nil {
			return err
		}
		f.metrics.drained.Inc(ctx, 1)
		if err := f.bundleFn.ProcessElement(ctx, beam.EventTime(env.EventTimeMs), key, value, emit, fail); err != nil {
			return err
		}
	}
	return nil
}

// drainedValue is the input value of an escrowed element, as bundleFn
// takes it: with its window when the input carries windows.
func (f *escrowFn) drainedValue(key any, env state.Envelope) (any, error) {
	if f.Carried {
		return windowed{Window: env.Window, Value: env.Value}, nil
	}
	return f.decodeValue(key, env.Value)
}

package async

// The end-of-input drain of the unbounded path. A runner may end a stream
// without firing the processing-time timers its keys still have: Flink's
// portable runner ignores them once the input watermark has passed the
// global window's end (runners-core's StatefulDoFnRunner), so the elements
// those keys held would never be committed. To lose none, streamFn sends,
// next to its outputs and in the same callback as the bag change, one
// record per key callback to a second keyed output: the elements it
// accepted and those it committed (emitted, or failed for good).
// escrowFn, a second stateful DoFn keyed alike, keeps each key's escrowed
// elements minus its released ones as a log in one bag: a record appends
// its changes, and a rewrite drops the cancelled pairs once they outweigh
// what is left (worthCompacting), so each record reads the key's backlog,
// not its history. An event-time timer near the global window's end
// (drainFiring) is held at the earliest escrowed event time, and set again
// only when that moves. The timer fires only once the input watermark has
// passed the end of time and streamFn's own holds are gone; what it finds
// then was never committed by streamFn and never will be, and it runs it
// the way the bounded path does (bundleFn), in the same bundle as the
// clearing of its state. On runners that fire streamFn's timers until its
// keys are empty (prism; Dataflow, as read) every escrow has been released
// by then and the timer finds nothing. Opt-in (WithEndOfInputDrain), for
// its cost.
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
	escrowStateID = "asyncEscrow"
	drainFamily   = "asyncDrain"
)

// The kinds of entry in escrowFn's bag (the first byte). The bag is a log:
// a record of streamFn appends what it changes, and a compaction rewrites
// the log as the book it amounts to once cancelled pairs outweigh it.
const (
	entryEscrow  byte = 1 // then elements as one bag entry (oneEntry)
	entryRelease byte = 2 // then pairs of varints: nonce, seq
	// entryDrained names the elements the drain ran (as entryRelease
	// does): a release of one later means the stream committed it too (see
	// errDrainedTwice).
	entryDrained byte = 3
)

// escrowID names one element of a key: the incarnation of the key's state
// that accepted it and its place in that incarnation (state.Envelope).
type escrowID struct {
	Nonce uint64
	Seq   int64
}

func idOf(env state.Envelope) escrowID { return escrowID{Nonce: env.Nonce, Seq: env.Seq} }

// callbackRecord encodes what one key callback of streamFn sends escrowFn:
// the elements it accepted (encoded envelopes) and those it committed.
// Layout: the length of the accepted part as a uvarint, the accepted part
// (oneEntry; empty when none), then the committed ones as in idsEntry.
func callbackRecord(accepted [][]byte, committed []escrowID) []byte {
	var part []byte
	if len(accepted) > 0 {
		part = oneEntry(accepted)
	}
	b := binary.AppendUvarint(nil, uint64(len(part)))
	b = append(b, part...)
	return appendIDs(b, committed)
}

// decodeCallbackRecord reads a callbackRecord.
func decodeCallbackRecord(rec []byte) (accepted state.Entry, committed []escrowID, err error) {
	n, k := binary.Uvarint(rec)
	if k <= 0 || n > uint64(len(rec)-k) {
		return state.Entry{}, nil, errors.New("an escrow record is cut short")
	}
	if n > 0 {
		if accepted, err = state.DecodeEntry(rec[k : k+int(n)]); err != nil {
			return state.Entry{}, nil, err
		}
	}
	committed, err = decodeIDs(rec[k+int(n):])
	return accepted, committed, err
}

// idsEntry encodes a bag entry of kind that names elements.
func idsEntry(kind byte, ids []escrowID) []byte { return appendIDs([]byte{kind}, ids) }

func appendIDs(b []byte, ids []escrowID) []byte {
	for _, id := range ids {
		b = binary.AppendUvarint(b, id.Nonce)
		b = binary.AppendVarint(b, id.Seq)
	}
	return b
}

// decodeIDs reads the ids that appendIDs wrote.
func decodeIDs(b []byte) ([]escrowID, error) {
	var ids []escrowID
	for len(b) > 0 {
		nonce, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("a list of escrowed elements is cut short")
		}
		seq, m := binary.Varint(b[n:])
		if m <= 0 {
			return nil, errors.New("a list of escrowed elements is cut short")
		}
		ids, b = append(ids, escrowID{nonce, seq}), b[n+m:]
	}
	return ids, nil
}

// escrowBook is one key's escrow state, as the sets of elements its log
// names as escrowed (E) and as released (R): held is E minus R, early (a
// release that came before its escrow: records of two callbacks may
// arrive in either order) is R minus E, and the elements in both are
// cancelled pairs, dead weight that a compaction drops. Being sets, the
// book is the same whatever order the log's entries are read in, and a
// record repeated while its pair is in the log changes nothing. Once a
// compaction (or the clearing of an empty book) has dropped the pair, a
// repeated escrow would be held again and a repeated release kept as
// early: the log relies on the runner delivering each committed record
// once, as the Beam model has it (a failed bundle's records are
// discarded with its state).
type escrowBook struct {
	held     []state.Envelope
	heldRaws [][]byte
	escrowed map[escrowID]bool // E
	released map[escrowID]bool // R
	// early (R minus E) and cancelled (the size of E and R) follow from
	// the two sets, and are kept as each record applies rather than
	// derived, because worthCompacting reads them on every record: a
	// count over E and R would cost each record the size of the log.
	early      map[escrowID]bool
	cancelled  int
	drained    map[escrowID]bool // run by a drain
	drainedRaw []byte            // their entry
	// recording: a record is being applied (not the log read), and what
	// it adds to E and R is collected for the log.
	recording      bool
	appendRaws     [][]byte
	appendReleases []escrowID
}

func newEscrowBook() *escrowBook {
	return &escrowBook{escrowed: map[escrowID]bool{}, released: map[escrowID]bool{}, early: map[escrowID]bool{}, drained: map[escrowID]bool{}}
}

// escrow adds elements to E: held, or cancelled with their release. An
// element in E already is a copy, and changes nothing; one the drain ran is
// an error (errDrainedTwice).
func (b *escrowBook) escrow(envs []state.Envelope, raws [][]byte) error {
	for i, env := range envs {
		id := idOf(env)
		switch {
		case b.escrowed[id]:
			continue
		case b.drained[id]:
			return errDrainedTwice
		case b.released[id]:
			delete(b.early, id)
			b.cancelled++
		default:
			b.held, b.heldRaws = append(b.held, env), append(b.heldRaws, raws[i])
		}
		b.escrowed[id] = true
		if b.recording {
			b.appendRaws = append(b.appendRaws, raws[i])
		}
	}
	return nil
}

// release adds elements to R: cancelled with their escrow, or early. An
// element in R already changes nothing; one the drain ran is an error
// (errDrainedTwice).
func (b *escrowBook) release(ids []escrowID) error {
	gone := map[escrowID]bool{}
	for _, id := range ids {
		switch {
		case b.released[id]:
			continue
		case b.drained[id]:
			return errDrainedTwice
		case b.escrowed[id]:
			gone[id] = true
			b.cancelled++
		default:
			b.early[id] = true
		}
		b.released[id] = true
		if b.recording {
			b.appendReleases = append(b.appendReleases, id)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	keep, keepRaws := b.held[:0], b.heldRaws[:0]
	for i, env := range b.held {
		if !gone[idOf(env)] {
			keep, keepRaws = append(keep, env), append(keepRaws, b.heldRaws[i])
		}
	}
	b.held, b.heldRaws = keep, keepRaws
	return nil
}

// appends is the log entries of the record applied since the log was read.
func (b *escrowBook) appends() [][]byte {
	var out [][]byte
	if len(b.appendRaws) > 0 {
		out = append(out, append([]byte{entryEscrow}, oneEntry(b.appendRaws)...))
	}
	if len(b.appendReleases) > 0 {
		out = append(out, idsEntry(entryRelease, b.appendReleases))
	}
	return out
}

// compacted is the log rewritten as the book: held elements, early
// releases and drained elements, without the cancelled pairs.
func (b *escrowBook) compacted() [][]byte {
	var out [][]byte
	if len(b.heldRaws) > 0 {
		out = append(out, append([]byte{entryEscrow}, oneEntry(b.heldRaws)...))
	}
	if early := b.earlyIDs(); len(early) > 0 {
		out = append(out, idsEntry(entryRelease, early))
	}
	if b.drainedRaw != nil {
		out = append(out, b.drainedRaw)
	}
	return out
}

// worthCompacting says whether the log's cancelled pairs outweigh the book.
// A rewrite then costs no more than the appends that made those pairs, and
// the log never names more than three elements per element held or early
// (each cancelled pair names one twice), besides the drained entry: each
// record reads the key's backlog, not its history.
func (b *escrowBook) worthCompacting() bool {
	return b.cancelled > len(b.held)+len(b.early)
}

// earlyIDs are the early releases, in order.
func (b *escrowBook) earlyIDs() []escrowID {
	ids := make([]escrowID, 0, len(b.early))
	for id := range b.early {
		ids = append(ids, id)
	}
	sortIDs(ids)
	return ids
}

func sortIDs(ids []escrowID) {
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Nonce != ids[j].Nonce {
			return ids[i].Nonce < ids[j].Nonce
		}
		return ids[i].Seq < ids[j].Seq
	})
}

// errDrainedTwice fails the job rather than let it go on silently when the
// stream commits an element the drain ran: the runner fired the drain's
// event-time timer before the watermark reached it, against the Beam model
// (an event-time timer fires once the input watermark passes it, and a
// pending timer upstream holds that watermark at its output timestamp).
// Beam Python's FnApiRunner (apache-beam 2.77) does so
// (integration/watermark_test.go): it runs both DoFns in the stage of an
// unbounded source, whose input watermark is at its maximum from the first
// bundle.
var errDrainedTwice = errors.New("the end-of-input drain ran an element that the stream then accepted or committed again, so its outputs may be emitted twice: " +
	"this runner fired the drain's event-time timer before the watermark reached it, while the stream still held the element " +
	"(Beam Python's portable job service does, for stateful DoFns in an unbounded source's stage); run the transform without async.WithEndOfInputDrain() on this runner")

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
	// Escrow is the key's log (entry kinds above): escrowed elements,
	// releases, and the elements a drain ran.
	Escrow beamstate.Bag[[]byte]
	// Drain fires near the global window's end (drainFiring), held at the
	// earliest held event time, and is cleared when nothing is held.
	Drain beamtimers.EventTime
}

func newEscrowFn(c core) *escrowFn {
	return &escrowFn{bundleFn: *newBundleFn(c), Escrow: beamstate.MakeBagState[[]byte](escrowStateID),
		Drain: beamtimers.InEventTime(drainFamily)}
}

// StartBundle begins a bundle; only a drain runs anything in it.
func (f *escrowFn) StartBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.StartBundle(ctx, emit, fail)
}

// FinishBundle waits for what a drain in this bundle started, and emits it.
func (f *escrowFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.FinishBundle(ctx, emit, fail)
}

// ProcessElement applies one callback record of streamFn to the key's book:
// it appends the record's changes to the log, or rewrites the log when
// that is cheaper (worthCompacting), and sets the drain timer where the
// hold moved, or clears it when nothing is escrowed.
func (f *escrowFn) ProcessElement(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, rec []byte, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure)) error {
	accepted, committed, err := decodeCallbackRecord(rec)
	if err != nil {
		return fmt.Errorf("async: an escrow record of key %v this version cannot read: %w", key, err)
	}
	b, err := f.read(sp)
	if err != nil {
		return err
	}
	heldBefore, holdBefore := len(b.held), b.earliest()
	if err := b.escrow(accepted.Envelopes, accepted.Raws); err != nil {
		return fmt.Errorf("async: key %v: %w", key, err)
	}
	if err := b.release(committed); err != nil {
		return fmt.Errorf("async: key %v: %w", key, err)
	}
	if err := f.write(sp, b); err != nil {
		return err
	}
	switch hold := b.earliest(); {
	case len(b.held) == 0 && heldBefore > 0:
		f.Drain.Clear(tp)
	case len(b.held) > 0 && (heldBefore == 0 || hold != holdBefore):
		f.Drain.Set(tp, drainFiring(hold).ToTime(), beamtimers.WithOutputTimestamp(hold.ToTime()))
	}
	return nil
}

// read reads the key's book from its log: the drained entry first, so that
// an escrow or release of a drained element is refused in any read order.
func (f *escrowFn) read(sp beamstate.Provider) (*escrowBook, error) {
	b := newEscrowBook()
	entries, _, err := f.Escrow.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("async: reading bag state: %w", err)
	}
	for _, drainedFirst := range []bool{true, false} {
		for _, raw := range entries {
			if len(raw) == 0 {
				return nil, fmt.Errorf("async: bag state %q holds an empty entry", escrowStateID)
			}
			if (raw[0] == entryDrained) != drainedFirst {
				continue
			}
			if err := b.apply(raw); err != nil {
				return nil, fmt.Errorf("async: bag state %q: %w", escrowStateID, err)
			}
		}
	}
	b.recording = true // what follows is a record's, for the log
	return b, nil
}

// apply adds one entry of the log to the book.
func (b *escrowBook) apply(raw []byte) error {
	switch raw[0] {
	case entryEscrow:
		entry, err := state.DecodeEntry(raw[1:])
		if err != nil {
			return fmt.Errorf("an entry this version cannot read: %w", err)
		}
		return b.escrow(entry.Envelopes, entry.Raws)
	case entryRelease:
		ids, err := decodeIDs(raw[1:])
		if err != nil {
			return err
		}
		return b.release(ids)
	case entryDrained:
		ids, err := decodeIDs(raw[1:])
		if err != nil {
			return err
		}
		b.drainedRaw = raw
		for _, id := range ids {
			b.drained[id] = true
		}
		return nil
	default:
		return fmt.Errorf("an entry of unknown kind %d", raw[0])
	}
}

// write stores the record just applied to b: its appends, or the whole
// book when the log's cancelled pairs outweigh it.
func (f *escrowFn) write(sp beamstate.Provider, b *escrowBook) error {
	entries := b.appends()
	if b.worthCompacting() {
		if err := f.Escrow.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
		entries, b.cancelled = b.compacted(), 0
	}
	for _, e := range entries {
		if err := f.Escrow.Add(sp, e); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
	}
	return nil
}

// drainSpan is the width of the band below the global window's end where
// drain timers fire: 2^50 ms, some 35,000 years, so that the band starts
// far beyond any event time a watermark reaches before the end of input.
const drainSpan = int64(1) << 50

// drainFiring is when the drain timer held at hold fires: in the band of
// drainSpan below the global window's end, which the watermark passes only
// at the end of input, never before its hold, and at another instant for
// another hold less than drainSpan away. A hold in the band (as at the
// global window's end) fires at itself; one below it at the band's instant
// congruent to it modulo drainSpan, which no other hold within drainSpan
// shares. Never before the hold, because Beam forbids an output timestamp
// after the firing, and Flink holds the watermark only for one before it
// (DoFnOperator's FlinkTimerInternals.timerUsesOutputTimestamp; a timer at
// its own output timestamp fires before the watermark passes it).
// A firing that moves with its hold is needed on prism (v2.77): it takes a
// timer set again at the same instant with another hold for the earlier
// setting and releases the earlier hold twice, which fails its job.
func drainFiring(hold mtime.Time) mtime.Time {
	band := mtime.EndOfGlobalWindowTime - mtime.Time(drainSpan)
	hold = min(hold, mtime.EndOfGlobalWindowTime) // no element is later
	if hold >= band {
		return hold
	}
	offset := ((int64(hold-band) % drainSpan) + drainSpan) % drainSpan
	return band + mtime.Time(offset)
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
	// The drained elements stay named in the log, which the runner
	// collects with the window, and so do the early releases. Where the
	// runner honours the watermark every record has arrived before this
	// timer fires; one that fires it early (Beam Python's job service) can
	// bring records after it: an escrow or release of a drained element
	// then fails the job (errDrainedTwice), and an escrow of a released
	// one is cancelled, not drained again.
	if err := f.Escrow.Clear(sp); err != nil {
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
		sortIDs(ids)
		if err := f.Escrow.Add(sp, idsEntry(entryDrained, ids)); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
	}
	if early := b.earlyIDs(); len(early) > 0 {
		if err := f.Escrow.Add(sp, idsEntry(entryRelease, early)); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
	}
	// At the end of input (on such a runner) every record has arrived, so
	// what is held is of the key's last incarnation, whose order is its seq.
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

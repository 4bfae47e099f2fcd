package async

// The end-of-input drain of the unbounded path. A runner may end a stream
// without firing the processing-time timers its keys still have: Flink's
// portable runner ignores them once the input watermark has passed the
// global window's end (runners-core's StatefulDoFnRunner), so the elements
// those keys held would never be committed. To lose none, streamFn sends,
// next to its outputs and in the same callback as the bag change, one
// record per key callback to a second keyed output: the elements it
// accepted, those it committed (emitted, or failed for good), the key's
// hold after the callback (the earliest event time of its pending and
// queued elements, or none) and an ordinal (nextOrdinal) that orders the
// records of a key. escrowFn, a second stateful DoFn keyed alike, keeps
// each key's escrowed elements minus its released ones as a log in one bag
// (escrowlog.go), and a summary in another (escrowsummary.go). An
// event-time timer near the global window's end (drainFiring) is held where
// the summary says, and set again only when that moves. The timer fires
// only once the input watermark has passed the end of time and streamFn's
// own holds are gone; what it finds then was never committed by streamFn
// and never will be (escrowdrain.go). On runners that fire streamFn's
// timers until its keys are empty (prism; Dataflow, as read) every escrow
// has been released by then and the timer finds nothing. Opt-in
// (WithEndOfInputDrain), for its cost.
//
// A record costs the same whatever the key holds: it reads the summary,
// appends its body to the log, and rewrites the summary. The log is read
// only by the drain, by the first record of a key, by every record once a
// drain has run (errDrainedTwice), by a record without a hold (an earlier
// version's), and by a rewrite as the book it amounts to, which the
// summary's counts call for once cancelled pairs weigh enough
// (escrowSummary.compactDue): a rewrite reads at most a few elements per
// element appended since the last one.
//
// The timer is held at the hold of the newest record applied (by ordinal); a
// rewrite that finds nothing held clears it until the next record. Records
// may arrive in any order (prism orders a stage's elements by timestamp,
// Dataflow promises no order, Flink keeps a key's order). The hold is never
// after an element the drain or the stream has still to commit: one whose
// escrow was applied was accepted at or before the newest record, so if it
// is pending now it was then, and that record's hold is at or before it; one
// whose escrow has not arrived holds the watermark by its record in flight,
// whose timestamp is at or before it. Once every record has arrived (an
// event-time timer fires only after the watermark, which records in flight
// hold), the newest is the key's last callback and its hold is exact. A
// key's callbacks run one at a time, and ordinals increase within a process;
// a key that moves between workers relies on their clocks agreeing to better
// than the move takes. A key whose log a read finds empty leaves no state; a
// record older than the newest that comes after that starts the summary
// again with its own hold, which is no later than what it escrows, and the
// next records correct it.
//
// Two DoFns, not one with two timer families: Beam Go v2.77's harness can
// hang a bundle of a DoFn that declares two (see chooseDoFn).

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// Names of escrowFn's state and timer, as they appear in the job graph.
const (
	escrowStateID  = "asyncEscrow"
	summaryStateID = "asyncEscrowSummary"
	drainFamily    = "asyncDrain"
)

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

// escrowFn keeps, per key, the elements streamFn accepted and has not
// committed, and at the end of input runs those that remain (see the file's
// comment).
type escrowFn struct {
	bundleFn
	// Escrow is the key's log (entry kinds in escrowlog.go): escrowed
	// elements, releases, and the elements a drain ran.
	Escrow beamstate.Bag[[]byte]
	// EscrowSummary holds one entry, the key's escrowSummary. A bag, not
	// a value state: Beam Go keeps a value in a bag all the same, and bags
	// are what every runner this package supports has run.
	EscrowSummary beamstate.Bag[[]byte]
	// Drain fires near the global window's end (drainFiring), held where
	// the summary says, and is cleared when nothing is to be held.
	Drain beamtimers.EventTime
}

func newEscrowFn(c worker.Core) *escrowFn {
	return &escrowFn{bundleFn: *newBundleFn(c), Escrow: beamstate.MakeBagState[[]byte](escrowStateID),
		EscrowSummary: beamstate.MakeBagState[[]byte](summaryStateID), Drain: beamtimers.InEventTime(drainFamily + c.TimerSuffix)}
}

// StartBundle begins a bundle; only a drain runs anything in it.
func (f *escrowFn) StartBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.StartBundle(ctx, emit, fail)
}

// FinishBundle waits for what a drain in this bundle started, and emits it.
func (f *escrowFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.FinishBundle(ctx, emit, fail)
}

// ProcessElement applies one callback record of streamFn to the key: it
// appends the record to the log and counts it in the summary, or, when
// the summary cannot stand for the log (none yet, a drain has run, a
// record without a hold) or calls for a rewrite, reads the log and
// rewrites it as its book. It sets the drain timer where the hold moved,
// or clears it when nothing is to be held.
func (f *escrowFn) ProcessElement(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key beam.X, raw []byte, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure)) error {
	rec, err := decodeRecord(raw)
	if err != nil {
		return fmt.Errorf("async: an escrow record of key %v this version cannot read: %w", key, err)
	}
	sum, found, err := f.readSummary(sp)
	if err != nil {
		return err
	}
	appends := found && !sum.drained && rec.hasHold
	if appends {
		sum.add(rec)
	} else {
		sum.newer(rec)
	}
	if appends && !sum.compactDue() {
		if err := f.Escrow.Add(sp, rec.logEntry()); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
		f.hold(tp, &sum, sum.newestHold)
		return f.writeSummary(sp, sum)
	}
	b, err := f.read(sp)
	if err != nil {
		return err
	}
	if err := b.applyBody(rec.body); err != nil {
		if errors.Is(err, errDrainedTwice) {
			return fmt.Errorf("async: key %v: %w", key, err)
		}
		return fmt.Errorf("async: an escrow record of key %v this version cannot read: %w", key, err)
	}
	return f.rewrite(sp, tp, b, sum, found, sum.drained || !rec.hasHold)
}

// rewrite replaces the key's log with its book b, and the summary with sum
// counting it; a book that holds nothing takes the key's state and timer
// away. The timer is held at the newest record's hold, or, byBook (no
// record has told one since the drain, or ever), at the book's earliest
// held element; at none when nothing is held. found says a summary is
// stored.
func (f *escrowFn) rewrite(sp beamstate.Provider, tp beamtimers.Provider, b *escrowBook, sum escrowSummary, found, byBook bool) error {
	if b.entries > 0 {
		if err := f.Escrow.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
	}
	if b.empty() {
		f.hold(tp, &sum, holdNone)
		if !found {
			return nil
		}
		if err := f.EscrowSummary.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
		return nil
	}
	for _, e := range b.compacted() {
		if err := f.Escrow.Add(sp, e); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
	}
	sum.held, sum.early, sum.escrowed, sum.released = int64(len(b.held)), int64(len(b.early)), 0, 0
	want := sum.newestHold
	switch {
	case len(b.held) == 0:
		want = holdNone
	case byBook:
		want = b.earliest()
	}
	f.hold(tp, &sum, want)
	return f.writeSummary(sp, sum)
}

// hold sets or clears the drain timer so that it is held at want, and
// records that in sum.
func (f *escrowFn) hold(tp beamtimers.Provider, sum *escrowSummary, want mtime.Time) {
	set, clear := timerChange(sum.timer, want)
	switch {
	case set:
		f.Drain.Set(tp, drainFiring(want).ToTime(), beamtimers.WithOutputTimestamp(want.ToTime()))
	case clear:
		f.Drain.Clear(tp)
	}
	sum.timer = want
}

// readSummary reads the key's summary; found is false when there is none.
func (f *escrowFn) readSummary(sp beamstate.Provider) (sum escrowSummary, found bool, err error) {
	entries, ok, err := f.EscrowSummary.Read(sp)
	switch {
	case err != nil:
		return sum, false, fmt.Errorf("async: reading bag state: %w", err)
	case !ok || len(entries) == 0:
		return newSummary(), false, nil
	case len(entries) > 1:
		return sum, false, fmt.Errorf("async: bag state %q holds %d entries; want one", summaryStateID, len(entries))
	}
	if sum, err = decodeSummary(entries[0]); err != nil {
		return sum, false, fmt.Errorf("async: bag state %q: %w", summaryStateID, err)
	}
	return sum, true, nil
}

// writeSummary replaces the key's summary.
func (f *escrowFn) writeSummary(sp beamstate.Provider, sum escrowSummary) error {
	if err := f.EscrowSummary.Clear(sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	if err := f.EscrowSummary.Add(sp, sum.encode()); err != nil {
		return fmt.Errorf("async: adding to bag state: %w", err)
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
	b.entries = len(entries)
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
	return b, nil
}

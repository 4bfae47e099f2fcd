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
// queued elements, or none) and an ordinal (drain.NextOrdinal) that orders the
// records of a key. escrowFn, a second stateful DoFn keyed alike, keeps
// each key's escrowed elements minus its released ones as a log in one bag
// (internal/drain), and a summary in another. An
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
// drain has run (drain.ErrDrainedTwice), by a record without a hold (an earlier
// version's), and by a rewrite as the book it amounts to, which the
// summary's counts call for once cancelled pairs weigh enough
// (drain.Summary.CompactDue): a rewrite reads at most a few elements per
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

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/drain"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// Names of escrowFn's state and timer, as they appear in the job graph.
const (
	escrowStateID  = "asyncEscrow"
	summaryStateID = "asyncEscrowSummary"
	drainFamily    = "asyncDrain"
)

// escrowFn keeps, per key, the elements streamFn accepted and has not
// committed, and at the end of input runs those that remain (see the file's
// comment).
type escrowFn struct {
	bundleFn
	// Escrow is the key's log (entry kinds in internal/drain): escrowed
	// elements, releases, and the elements a drain ran.
	Escrow beamstate.Bag[[]byte]
	// EscrowSummary holds one entry, the key's drain.Summary. A bag, not
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
	rec, err := drain.DecodeRecord(raw)
	if err != nil {
		return fmt.Errorf("async: an escrow record of key %v this version cannot read: %w", key, err)
	}
	sum, found, err := f.readSummary(sp)
	if err != nil {
		return err
	}
	appends := found && !sum.Drained && rec.HasHold
	if appends {
		sum.Add(rec)
	} else {
		sum.Newer(rec)
	}
	if appends && !sum.CompactDue() {
		if err := f.Escrow.Add(sp, rec.LogEntry()); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
		f.hold(tp, &sum, sum.NewestHold)
		return f.writeSummary(sp, sum)
	}
	b, err := f.read(sp)
	if err != nil {
		return err
	}
	if err := b.ApplyBody(rec.Body); err != nil {
		if errors.Is(err, drain.ErrDrainedTwice) {
			return fmt.Errorf("async: key %v: %w", key, err)
		}
		return fmt.Errorf("async: an escrow record of key %v this version cannot read: %w", key, err)
	}
	return f.rewrite(sp, tp, b, sum, found, sum.Drained || !rec.HasHold)
}

// rewrite replaces the key's log with its book b, and the summary with sum
// counting it; a book that holds nothing takes the key's state and timer
// away. The timer is held at the newest record's hold, or, byBook (no
// record has told one since the drain, or ever), at the book's earliest
// held element; at none when nothing is held. found says a summary is
// stored.
func (f *escrowFn) rewrite(sp beamstate.Provider, tp beamtimers.Provider, b *drain.Book, sum drain.Summary, found, byBook bool) error {
	if b.Entries > 0 {
		if err := f.Escrow.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
	}
	if b.Empty() {
		f.hold(tp, &sum, drain.HoldNone)
		if !found {
			return nil
		}
		if err := f.EscrowSummary.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
		return nil
	}
	for _, e := range b.Compacted() {
		if err := f.Escrow.Add(sp, e); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
	}
	sum.Held, sum.Early, sum.Escrowed, sum.Released = int64(len(b.Held)), int64(len(b.Early)), 0, 0
	want := sum.NewestHold
	switch {
	case len(b.Held) == 0:
		want = drain.HoldNone
	case byBook:
		want = b.Earliest()
	}
	f.hold(tp, &sum, want)
	return f.writeSummary(sp, sum)
}

// hold sets or clears the drain timer so that it is held at want, and
// records that in sum.
func (f *escrowFn) hold(tp beamtimers.Provider, sum *drain.Summary, want mtime.Time) {
	set, clear := drain.TimerChange(sum.Timer, want)
	switch {
	case set:
		f.Drain.Set(tp, drainFiring(want).ToTime(), beamtimers.WithOutputTimestamp(want.ToTime()))
	case clear:
		f.Drain.Clear(tp)
	}
	sum.Timer = want
}

// readSummary reads the key's summary; found is false when there is none.
func (f *escrowFn) readSummary(sp beamstate.Provider) (sum drain.Summary, found bool, err error) {
	entries, ok, err := f.EscrowSummary.Read(sp)
	switch {
	case err != nil:
		return sum, false, fmt.Errorf("async: reading bag state: %w", err)
	case !ok || len(entries) == 0:
		return drain.NewSummary(), false, nil
	case len(entries) > 1:
		return sum, false, fmt.Errorf("async: bag state %q holds %d entries; want one", summaryStateID, len(entries))
	}
	if sum, err = drain.DecodeSummary(entries[0]); err != nil {
		return sum, false, fmt.Errorf("async: bag state %q: %w", summaryStateID, err)
	}
	return sum, true, nil
}

// writeSummary replaces the key's summary.
func (f *escrowFn) writeSummary(sp beamstate.Provider, sum drain.Summary) error {
	if err := f.EscrowSummary.Clear(sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	if err := f.EscrowSummary.Add(sp, sum.Encode()); err != nil {
		return fmt.Errorf("async: adding to bag state: %w", err)
	}
	return nil
}

// read reads the key's book from its log: the drained entry first, so that
// an escrow or release of a drained element is refused in any read order.
func (f *escrowFn) read(sp beamstate.Provider) (*drain.Book, error) {
	b := drain.NewBook()
	entries, _, err := f.Escrow.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("async: reading bag state: %w", err)
	}
	b.Entries = len(entries)
	for _, drainedFirst := range []bool{true, false} {
		for _, raw := range entries {
			if len(raw) == 0 {
				return nil, fmt.Errorf("async: bag state %q holds an empty entry", escrowStateID)
			}
			if (raw[0] == drain.EntryDrained) != drainedFirst {
				continue
			}
			if err := b.Apply(raw); err != nil {
				return nil, fmt.Errorf("async: bag state %q: %w", escrowStateID, err)
			}
		}
	}
	return b, nil
}

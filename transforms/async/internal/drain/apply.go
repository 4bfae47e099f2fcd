package drain

// Applying the stream's records to a key's log and summary, and holding
// the drain timer where the newest record says.

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/bounded"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// Names of escrowFn's state and timer, as they appear in the job graph.
const (
	LogStateID     = "asyncEscrow"
	SummaryStateID = "asyncEscrowSummary"
	DrainFamily    = "asyncDrain"
)

// Path runs an escrowFn's callbacks: it applies the stream's
// records to the key's log and summary, and at the end of input drains
// what the log holds (drain.go) through the bounded path.
type Path struct {
	*worker.Core
	bundle *bounded.Path
	// log, summary and timer are the DoFn's (see escrowFn).
	log, summary *beamstate.Bag[[]byte]
	timer        *beamtimers.EventTime
}

// New runs the callbacks of a DoFn whose elements run on bundle,
// with bags log and summary (see LogStateID, SummaryStateID) and timer.
func New(bundle *bounded.Path, log, summary *beamstate.Bag[[]byte], timer *beamtimers.EventTime) *Path {
	return &Path{Core: bundle.Core, bundle: bundle, log: log, summary: summary, timer: timer}
}

// ProcessElement applies one callback record of streamFn to the key: it
// appends the record to the log and counts it in the summary, or, when
// the summary cannot stand for the log (none yet, a drain has run, a
// record without a hold) or calls for a rewrite, reads the log and
// rewrites it as its book. It sets the drain timer where the hold moved,
// or clears it when nothing is to be held.
func (f *Path) ProcessElement(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key any, raw []byte) error {
	rec, err := DecodeRecord(raw)
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
		if err := f.log.Add(sp, rec.LogEntry()); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
		f.hold(tp, &sum, sum.NewestHold)
		return f.writeSummary(sp, sum)
	}
	b, err := f.Read(sp)
	if err != nil {
		return err
	}
	if err := b.ApplyBody(rec.Body); err != nil {
		if errors.Is(err, ErrDrainedTwice) {
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
func (f *Path) rewrite(sp beamstate.Provider, tp beamtimers.Provider, b *Book, sum Summary, found, byBook bool) error {
	if b.Entries > 0 {
		if err := f.log.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
	}
	if b.Empty() {
		f.hold(tp, &sum, HoldNone)
		if !found {
			return nil
		}
		if err := f.summary.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
		return nil
	}
	for _, e := range b.Compacted() {
		if err := f.log.Add(sp, e); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
	}
	sum.Held, sum.Early, sum.Escrowed, sum.Released = int64(len(b.Held)), int64(len(b.Early)), 0, 0
	want := sum.NewestHold
	switch {
	case len(b.Held) == 0:
		want = HoldNone
	case byBook:
		want = b.Earliest()
	}
	f.hold(tp, &sum, want)
	return f.writeSummary(sp, sum)
}

// hold sets or clears the drain timer so that it is held at want, and
// records that in sum.
func (f *Path) hold(tp beamtimers.Provider, sum *Summary, want mtime.Time) {
	set, clear := TimerChange(sum.Timer, want)
	switch {
	case set:
		f.timer.Set(tp, drainFiring(want).ToTime(), beamtimers.WithOutputTimestamp(want.ToTime()))
	case clear:
		f.timer.Clear(tp)
	}
	sum.Timer = want
}

// readSummary reads the key's summary; found is false when there is none.
func (f *Path) readSummary(sp beamstate.Provider) (sum Summary, found bool, err error) {
	entries, ok, err := f.summary.Read(sp)
	switch {
	case err != nil:
		return sum, false, fmt.Errorf("async: reading bag state: %w", err)
	case !ok || len(entries) == 0:
		return NewSummary(), false, nil
	case len(entries) > 1:
		return sum, false, fmt.Errorf("async: bag state %q holds %d entries; want one", SummaryStateID, len(entries))
	}
	if sum, err = DecodeSummary(entries[0]); err != nil {
		return sum, false, fmt.Errorf("async: bag state %q: %w", SummaryStateID, err)
	}
	return sum, true, nil
}

// writeSummary replaces the key's summary.
func (f *Path) writeSummary(sp beamstate.Provider, sum Summary) error {
	if err := f.summary.Clear(sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	if err := f.summary.Add(sp, sum.Encode()); err != nil {
		return fmt.Errorf("async: adding to bag state: %w", err)
	}
	return nil
}

// Read reads the key's book from its log: the drained entry first, so that
// an escrow or release of a drained element is refused in any read order.
func (f *Path) Read(sp beamstate.Provider) (*Book, error) {
	b := NewBook()
	entries, _, err := f.log.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("async: reading bag state: %w", err)
	}
	b.Entries = len(entries)
	for _, drainedFirst := range []bool{true, false} {
		for _, raw := range entries {
			if len(raw) == 0 {
				return nil, fmt.Errorf("async: bag state %q holds an empty entry", LogStateID)
			}
			if (raw[0] == EntryDrained) != drainedFirst {
				continue
			}
			if err := b.Apply(raw); err != nil {
				return nil, fmt.Errorf("async: bag state %q: %w", LogStateID, err)
			}
		}
	}
	return b, nil
}

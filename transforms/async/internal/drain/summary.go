package drain

// What the drain keeps of a key besides its log: a summary that each
// record reads and rewrites instead of the log, and the decisions taken
// from it.

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// summaryTag starts a summary entry.
const summaryTag byte = 1

// CompactFloor is the fewest cancelled pairs a rewrite of a log that still
// holds elements may be for, so that a small key is not rewritten at
// every record.
const CompactFloor = 32

// Summary is one key's summary in escrowFn.
type Summary struct {
	// Newest is the ordinal of the newest record applied since the key's
	// state was last empty, and NewestHold its hold.
	Newest     uint64
	NewestHold mtime.Time
	// Timer is the hold of the drain timer in force (HoldNone: none set).
	Timer mtime.Time
	// Drained: a drain has run; every record then reads the log
	// (ErrDrainedTwice).
	Drained bool
	// held and early are the book's sizes at the log's last rewrite, and
	// escrowed and released count the elements the records appended since
	// name (a record repeated counts twice).
	Held, Early, Escrowed, Released int64
}

// NewSummary is the summary of a key escrowFn knows nothing of.
func NewSummary() Summary {
	return Summary{NewestHold: HoldNone, Timer: HoldNone}
}

// Encode returns the summary's bag entry: the version, a flags byte (1:
// drained), then newest (uvarint), NewestHold and timer (varints, ms) and
// the four counts (uvarints).
func (s Summary) Encode() []byte {
	b := make([]byte, 0, 2+7*binary.MaxVarintLen64)
	var flags byte
	if s.Drained {
		flags |= 1
	}
	b = append(b, summaryTag, flags)
	b = binary.AppendUvarint(b, s.Newest)
	b = binary.AppendVarint(b, int64(s.NewestHold))
	b = binary.AppendVarint(b, int64(s.Timer))
	for _, n := range []int64{s.Held, s.Early, s.Escrowed, s.Released} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return b
}

// DecodeSummary reads what encode wrote.
func DecodeSummary(b []byte) (Summary, error) {
	if len(b) < 2 || b[0] != summaryTag || b[1]&^1 != 0 {
		return Summary{}, errors.New("not an escrow summary this version reads")
	}
	s := Summary{Drained: b[1]&1 != 0}
	rest, ok := b[2:], true
	uv := func() uint64 {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			ok = false
			return 0
		}
		rest = rest[n:]
		return v
	}
	v := func() int64 {
		x, n := binary.Varint(rest)
		if n <= 0 {
			ok = false
			return 0
		}
		rest = rest[n:]
		return x
	}
	s.Newest, s.NewestHold, s.Timer = uv(), mtime.Time(v()), mtime.Time(v())
	s.Held, s.Early, s.Escrowed, s.Released = int64(uv()), int64(uv()), int64(uv()), int64(uv())
	if !ok || len(rest) != 0 || min(s.Held, s.Early, s.Escrowed, s.Released) < 0 {
		return Summary{}, errors.New("an escrow summary is malformed")
	}
	return s, nil
}

// Add counts a record appended to the log, and takes its hold if it is
// the newest applied.
func (s *Summary) Add(r Record) {
	s.Escrowed += r.Accepted
	s.Released += r.Released
	s.Newer(r)
}

// Newer takes r's ordinal and hold if r is the newest record applied.
func (s *Summary) Newer(r Record) {
	if r.HasHold && r.Ordinal > s.Newest {
		s.Newest, s.NewestHold = r.Ordinal, r.Hold
	}
}

// CompactDue reports whether the log is worth rewriting as its book. At
// most min(held+escrowed, early+released, escrowed+released) of the
// elements it names are cancelled pairs (a pair needs an escrow and a
// release, one of them appended since the last rewrite, which left no
// pair); the log names held+early+escrowed+released. It is rewritten once
// the pairs it may hold weigh more than a quarter of it, and are at least
// CompactFloor or may be all of it (the key looks empty, and leaves no
// state). A rewrite so reads at most four elements per element appended
// since the last, and a log not rewritten names at most twice its book, or
// its book and 2 × CompactFloor.
func (s Summary) CompactDue() bool {
	pairs := min(s.Held+s.Escrowed, s.Early+s.Released, s.Escrowed+s.Released)
	named := s.Held + s.Early + s.Escrowed + s.Released
	return 4*pairs > named && (pairs >= CompactFloor || 2*pairs == named)
}

// TimerChange is what to do with the drain timer to hold it at want when
// it is held at inForce (HoldNone: no timer): set it, clear it, or
// neither.
func TimerChange(inForce, want mtime.Time) (set, clear bool) {
	switch {
	case want == inForce:
		return false, false
	case want == HoldNone:
		return false, true
	default:
		return true, false
	}
}

// lastOrdinal is the ordinal of the newest record this process made
// (NextOrdinal). Process-wide on purpose: it orders the callbacks of every
// key that ran here, and only order matters, so it needs no reset.
var lastOrdinal atomic.Uint64

// NextOrdinal returns the ordinal of a record: the wall clock in ns, or one
// more than the last, whichever is greater. Records made in one process so
// come in strictly increasing order; of two processes, in the order of
// their clocks.
func NextOrdinal() uint64 {
	for {
		last := lastOrdinal.Load()
		next := max(uint64(time.Now().UnixNano()), last+1)
		if lastOrdinal.CompareAndSwap(last, next) {
			return next
		}
	}
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

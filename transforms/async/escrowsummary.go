package async

// What escrowFn keeps of a key besides its log (escrow.go): a summary that
// each record reads and rewrites instead of the log, and the decisions
// taken from it.

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// summaryTag starts a summary entry.
const summaryTag byte = 1

// compactFloor is the fewest cancelled pairs a rewrite of a log that still
// holds elements may be for, so that a small key is not rewritten at
// every record.
const compactFloor = 32

// escrowSummary is one key's summary in escrowFn.
type escrowSummary struct {
	// newest is the ordinal of the newest record applied since the key's
	// state was last empty, and newestHold its hold.
	newest     uint64
	newestHold mtime.Time
	// timer is the hold of the drain timer in force (holdNone: none set).
	timer mtime.Time
	// drained: a drain has run; every record then reads the log
	// (errDrainedTwice).
	drained bool
	// held and early are the book's sizes at the log's last rewrite, and
	// escrowed and released count the elements the records appended since
	// name (a record repeated counts twice).
	held, early, escrowed, released int64
}

// newSummary is the summary of a key escrowFn knows nothing of.
func newSummary() escrowSummary {
	return escrowSummary{newestHold: holdNone, timer: holdNone}
}

// encode returns the summary's bag entry: the version, a flags byte (1:
// drained), then newest (uvarint), newestHold and timer (varints, ms) and
// the four counts (uvarints).
func (s escrowSummary) encode() []byte {
	b := make([]byte, 0, 2+7*binary.MaxVarintLen64)
	var flags byte
	if s.drained {
		flags |= 1
	}
	b = append(b, summaryTag, flags)
	b = binary.AppendUvarint(b, s.newest)
	b = binary.AppendVarint(b, int64(s.newestHold))
	b = binary.AppendVarint(b, int64(s.timer))
	for _, n := range []int64{s.held, s.early, s.escrowed, s.released} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return b
}

// decodeSummary reads what encode wrote.
func decodeSummary(b []byte) (escrowSummary, error) {
	if len(b) < 2 || b[0] != summaryTag || b[1]&^1 != 0 {
		return escrowSummary{}, errors.New("not an escrow summary this version reads")
	}
	s := escrowSummary{drained: b[1]&1 != 0}
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
	s.newest, s.newestHold, s.timer = uv(), mtime.Time(v()), mtime.Time(v())
	s.held, s.early, s.escrowed, s.released = int64(uv()), int64(uv()), int64(uv()), int64(uv())
	if !ok || len(rest) != 0 || min(s.held, s.early, s.escrowed, s.released) < 0 {
		return escrowSummary{}, errors.New("an escrow summary is malformed")
	}
	return s, nil
}

// add counts a record appended to the log, and takes its hold if it is
// the newest applied.
func (s *escrowSummary) add(r escrowRecord) {
	s.escrowed += r.accepted
	s.released += r.released
	s.newer(r)
}

// newer takes r's ordinal and hold if r is the newest record applied.
func (s *escrowSummary) newer(r escrowRecord) {
	if r.hasHold && r.ordinal > s.newest {
		s.newest, s.newestHold = r.ordinal, r.hold
	}
}

// compactDue reports whether the log is worth rewriting as its book. At
// most min(held+escrowed, early+released, escrowed+released) of the
// elements it names are cancelled pairs (a pair needs an escrow and a
// release, one of them appended since the last rewrite, which left no
// pair); the log names held+early+escrowed+released. It is rewritten once
// the pairs it may hold weigh more than a quarter of it, and are at least
// compactFloor or may be all of it (the key looks empty, and leaves no
// state). A rewrite so reads at most four elements per element appended
// since the last, and a log not rewritten names at most twice its book, or
// its book and 2 × compactFloor.
func (s escrowSummary) compactDue() bool {
	pairs := min(s.held+s.escrowed, s.early+s.released, s.escrowed+s.released)
	named := s.held + s.early + s.escrowed + s.released
	return 4*pairs > named && (pairs >= compactFloor || 2*pairs == named)
}

// timerChange is what to do with the drain timer to hold it at want when
// it is held at inForce (holdNone: no timer): set it, clear it, or
// neither.
func timerChange(inForce, want mtime.Time) (set, clear bool) {
	switch {
	case want == inForce:
		return false, false
	case want == holdNone:
		return false, true
	default:
		return true, false
	}
}

// lastOrdinal is the ordinal of the newest record this process made
// (nextOrdinal). Process-wide on purpose: it orders the callbacks of every
// key that ran here, and only order matters, so it needs no reset.
var lastOrdinal atomic.Uint64

// nextOrdinal returns the ordinal of a record: the wall clock in ns, or one
// more than the last, whichever is greater. Records made in one process so
// come in strictly increasing order; of two processes, in the order of
// their clocks.
func nextOrdinal() uint64 {
	for {
		last := lastOrdinal.Load()
		next := max(uint64(time.Now().UnixNano()), last+1)
		if lastOrdinal.CompareAndSwap(last, next) {
			return next
		}
	}
}

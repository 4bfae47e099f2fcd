package drain

// The record the stream sends per key callback, and the entries of the
// drain's log.

import (
	"encoding/binary"
	"errors"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/asyncbeam/asyncbeam/state"
)

// The kinds of entry in escrowFn's log (the first byte). A record applied
// without a read appends its body (EntryRecord); a rewrite writes the book
// it amounts to as one entry of each other kind.
const (
	EntryEscrow  byte = 1 // then elements as one bag entry (state.EncodeElements)
	EntryRelease byte = 2 // then pairs of varints: nonce, seq
	// EntryDrained names the elements the drain ran (as EntryRelease
	// does): a release of one later means the stream committed it too (see
	// ErrDrainedTwice).
	EntryDrained byte = 3
	// EntryRecord is a record's body (see Record): elements escrowed and
	// released at once.
	EntryRecord byte = 4
)

// recordTag starts every record. A record of an earlier version, which
// carried neither ordinal nor hold, starts with the length of its accepted
// part: 0, or at least an encoded envelope's length, never 1.
const recordTag byte = 1

// HoldNone is the hold of a key with nothing pending or queued: no timer.
const HoldNone = mtime.MaxTimestamp

// ID names one element of a key: the incarnation of the key's state
// that accepted it and its place in that incarnation (state.Envelope).
type ID struct {
	Nonce uint64
	Seq   int64
}

func IDOf(env state.Envelope) ID { return ID{Nonce: env.Nonce, Seq: env.Seq} }

// Record is one key callback of streamFn as escrowFn receives it.
type Record struct {
	// Ordinal orders the records of a key (NextOrdinal); hold is the
	// key's hold after the callback (HoldNone: empty). A record of an
	// earlier version has neither (HasHold false).
	Ordinal uint64
	Hold    mtime.Time
	HasHold bool
	// accepted and released count the elements the callback accepted and
	// committed; body holds them as an EntryRecord does.
	Accepted, Released int64
	Body               []byte
}

// EncodeRecord encodes what one key callback of streamFn sends escrowFn:
// the version, the ordinal (uvarint) and the hold (varint, ms), then the
// body: the number of elements accepted (uvarint), the length of their part
// (uvarint) and that part (oneEntry; empty when none), then the committed
// ones as in IDsEntry.
func EncodeRecord(ordinal uint64, hold mtime.Time, accepted [][]byte, committed []ID) []byte {
	var part []byte
	if len(accepted) > 0 {
		part = state.EncodeElements(accepted)
	}
	b := make([]byte, 0, 4*binary.MaxVarintLen64+len(part)+2*binary.MaxVarintLen64*len(committed))
	b = append(b, recordTag)
	b = binary.AppendUvarint(b, ordinal)
	b = binary.AppendVarint(b, int64(hold))
	b = binary.AppendUvarint(b, uint64(len(accepted)))
	b = binary.AppendUvarint(b, uint64(len(part)))
	b = append(b, part...)
	return AppendIDs(b, committed)
}

// DecodeRecord reads a record's header and checks its body's layout
// without decoding its elements (the log keeps the body as it came, and a
// rewrite decodes it). A record of the earlier layout has its body
// converted.
func DecodeRecord(b []byte) (Record, error) {
	if len(b) == 0 || b[0] != recordTag {
		return decodeOldRecord(b)
	}
	r := Record{HasHold: true}
	rest := b[1:]
	ord, n := binary.Uvarint(rest)
	if n <= 0 {
		return Record{}, errors.New("an escrow record is cut short")
	}
	hold, m := binary.Varint(rest[n:])
	if m <= 0 {
		return Record{}, errors.New("an escrow record is cut short")
	}
	r.Ordinal, r.Hold, r.Body = ord, mtime.Time(hold), rest[n+m:]
	acc, part, ids, err := SplitBody(r.Body)
	if err != nil {
		return Record{}, err
	}
	if (acc == 0) != (len(part) == 0) {
		return Record{}, errors.New("an escrow record's count of accepted elements disagrees with its part")
	}
	r.Accepted = int64(acc)
	n2, err := CountIDs(ids)
	r.Released = int64(n2)
	return r, err
}

// decodeOldRecord reads a record of the earlier layout: the length of the
// accepted part, the part, the committed ids.
func decodeOldRecord(b []byte) (Record, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return Record{}, errors.New("an escrow record is cut short")
	}
	part, ids := b[k:k+int(n)], b[k+int(n):]
	var accepted [][]byte
	if len(part) > 0 {
		entry, err := state.DecodeEntry(part)
		if err != nil {
			return Record{}, err
		}
		accepted = entry.Raws
	}
	committed, err := decodeIDs(ids)
	if err != nil {
		return Record{}, err
	}
	r, err := DecodeRecord(EncodeRecord(0, HoldNone, accepted, committed))
	r.HasHold = false
	return r, err
}

// SplitBody splits a record's body into the number of accepted elements,
// their part and the committed ids.
func SplitBody(body []byte) (accepted uint64, part, ids []byte, err error) {
	accepted, n := binary.Uvarint(body)
	if n <= 0 {
		return 0, nil, nil, errors.New("an escrow record is cut short")
	}
	l, m := binary.Uvarint(body[n:])
	if m <= 0 || l > uint64(len(body)-n-m) {
		return 0, nil, nil, errors.New("an escrow record is cut short")
	}
	start := n + m
	return accepted, body[start : start+int(l)], body[start+int(l):], nil
}

// LogEntry is the record as a log entry.
func (r Record) LogEntry() []byte {
	return append(append(make([]byte, 0, 1+len(r.Body)), EntryRecord), r.Body...)
}

// IDsEntry encodes a bag entry of kind that names elements.
func IDsEntry(kind byte, ids []ID) []byte { return AppendIDs([]byte{kind}, ids) }

func AppendIDs(b []byte, ids []ID) []byte {
	for _, id := range ids {
		b = binary.AppendUvarint(b, id.Nonce)
		b = binary.AppendVarint(b, id.Seq)
	}
	return b
}

// decodeIDs reads the ids that AppendIDs wrote.
func decodeIDs(b []byte) ([]ID, error) {
	var ids []ID
	for len(b) > 0 {
		nonce, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("a list of escrowed elements is cut short")
		}
		seq, m := binary.Varint(b[n:])
		if m <= 0 {
			return nil, errors.New("a list of escrowed elements is cut short")
		}
		ids, b = append(ids, ID{nonce, seq}), b[n+m:]
	}
	return ids, nil
}

// CountIDs counts the ids that AppendIDs wrote, as decodeIDs would read
// them.
func CountIDs(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		_, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, errors.New("a list of escrowed elements is cut short")
		}
		_, m := binary.Varint(b[k:])
		if m <= 0 {
			return 0, errors.New("a list of escrowed elements is cut short")
		}
		n, b = n+1, b[k+m:]
	}
	return n, nil
}

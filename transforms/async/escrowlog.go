package async

// The end-of-input drain's data (escrow.go): the record streamFn sends per
// key callback, the entries of escrowFn's log, and the book a log amounts
// to.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/asyncbeam/asyncbeam/state"
)

// The kinds of entry in escrowFn's log (the first byte). A record applied
// without a read appends its body (entryRecord); a rewrite writes the book
// it amounts to as one entry of each other kind.
const (
	entryEscrow  byte = 1 // then elements as one bag entry (oneEntry)
	entryRelease byte = 2 // then pairs of varints: nonce, seq
	// entryDrained names the elements the drain ran (as entryRelease
	// does): a release of one later means the stream committed it too (see
	// errDrainedTwice).
	entryDrained byte = 3
	// entryRecord is a record's body (see escrowRecord): elements escrowed and
	// released at once.
	entryRecord byte = 4
)

// recordTag starts every record. A record of an earlier version, which
// carried neither ordinal nor hold, starts with the length of its accepted
// part: 0, or at least an encoded envelope's length, never 1.
const recordTag byte = 1

// holdNone is the hold of a key with nothing pending or queued: no timer.
const holdNone = mtime.MaxTimestamp

// escrowID names one element of a key: the incarnation of the key's state
// that accepted it and its place in that incarnation (state.Envelope).
type escrowID struct {
	Nonce uint64
	Seq   int64
}

func idOf(env state.Envelope) escrowID { return escrowID{Nonce: env.Nonce, Seq: env.Seq} }

// escrowRecord is one key callback of streamFn as escrowFn receives it.
type escrowRecord struct {
	// ordinal orders the records of a key (nextOrdinal); hold is the
	// key's hold after the callback (holdNone: empty). A record of an
	// earlier version has neither (hasHold false).
	ordinal uint64
	hold    mtime.Time
	hasHold bool
	// accepted and released count the elements the callback accepted and
	// committed; body holds them as an entryRecord does.
	accepted, released int64
	body               []byte
}

// encodeRecord encodes what one key callback of streamFn sends escrowFn:
// the version, the ordinal (uvarint) and the hold (varint, ms), then the
// body: the number of elements accepted (uvarint), the length of their part
// (uvarint) and that part (oneEntry; empty when none), then the committed
// ones as in idsEntry.
func encodeRecord(ordinal uint64, hold mtime.Time, accepted [][]byte, committed []escrowID) []byte {
	var part []byte
	if len(accepted) > 0 {
		part = oneEntry(accepted)
	}
	b := make([]byte, 0, 4*binary.MaxVarintLen64+len(part)+2*binary.MaxVarintLen64*len(committed))
	b = append(b, recordTag)
	b = binary.AppendUvarint(b, ordinal)
	b = binary.AppendVarint(b, int64(hold))
	b = binary.AppendUvarint(b, uint64(len(accepted)))
	b = binary.AppendUvarint(b, uint64(len(part)))
	b = append(b, part...)
	return appendIDs(b, committed)
}

// decodeRecord reads a record's header and checks its body's layout
// without decoding its elements (the log keeps the body as it came, and a
// rewrite decodes it). A record of the earlier layout has its body
// converted.
func decodeRecord(b []byte) (escrowRecord, error) {
	if len(b) == 0 || b[0] != recordTag {
		return decodeOldRecord(b)
	}
	r := escrowRecord{hasHold: true}
	rest := b[1:]
	ord, n := binary.Uvarint(rest)
	if n <= 0 {
		return escrowRecord{}, errors.New("an escrow record is cut short")
	}
	hold, m := binary.Varint(rest[n:])
	if m <= 0 {
		return escrowRecord{}, errors.New("an escrow record is cut short")
	}
	r.ordinal, r.hold, r.body = ord, mtime.Time(hold), rest[n+m:]
	acc, part, ids, err := splitBody(r.body)
	if err != nil {
		return escrowRecord{}, err
	}
	if (acc == 0) != (len(part) == 0) {
		return escrowRecord{}, errors.New("an escrow record's count of accepted elements disagrees with its part")
	}
	r.accepted = int64(acc)
	n2, err := countIDs(ids)
	r.released = int64(n2)
	return r, err
}

// decodeOldRecord reads a record of the earlier layout: the length of the
// accepted part, the part, the committed ids.
func decodeOldRecord(b []byte) (escrowRecord, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return escrowRecord{}, errors.New("an escrow record is cut short")
	}
	part, ids := b[k:k+int(n)], b[k+int(n):]
	var accepted [][]byte
	if len(part) > 0 {
		entry, err := state.DecodeEntry(part)
		if err != nil {
			return escrowRecord{}, err
		}
		accepted = entry.Raws
	}
	committed, err := decodeIDs(ids)
	if err != nil {
		return escrowRecord{}, err
	}
	r, err := decodeRecord(encodeRecord(0, holdNone, accepted, committed))
	r.hasHold = false
	return r, err
}

// splitBody splits a record's body into the number of accepted elements,
// their part and the committed ids.
func splitBody(body []byte) (accepted uint64, part, ids []byte, err error) {
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

// logEntry is the record as a log entry.
func (r escrowRecord) logEntry() []byte {
	return append(append(make([]byte, 0, 1+len(r.body)), entryRecord), r.body...)
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

// countIDs counts the ids that appendIDs wrote, as decodeIDs would read
// them.
func countIDs(b []byte) (int, error) {
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

// escrowBook is one key's escrow state, as the sets of elements its log
// names as escrowed (E) and as released (R): held is E minus R, early (a
// release that came before its escrow: records of two callbacks may
// arrive in either order) is R minus E, and the elements in both are
// cancelled pairs, dead weight that a rewrite drops. Being sets, the book
// is the same whatever order the log's entries are read in, and a record
// repeated while its pair is in the log changes nothing. Once a rewrite
// (or the clearing of an empty book) has dropped the pair, a repeated
// escrow would be held again and a repeated release kept as early: the log
// relies on the runner delivering each committed record once, as the Beam
// model has it (a failed bundle's records are discarded with its state).
type escrowBook struct {
	// held and heldRaws are E minus R, in no order; heldAt indexes them.
	held     []state.Envelope
	heldRaws [][]byte
	heldAt   map[escrowID]int
	escrowed map[escrowID]bool // E
	released map[escrowID]bool // R
	// early (R minus E) follows from the two sets, and is kept as entries
	// apply rather than derived.
	early      map[escrowID]bool
	drained    map[escrowID]bool // run by a drain
	drainedRaw []byte            // their entry
	// entries is how many log entries were read into the book.
	entries int
}

func newEscrowBook() *escrowBook {
	return &escrowBook{heldAt: map[escrowID]int{}, escrowed: map[escrowID]bool{}, released: map[escrowID]bool{}, early: map[escrowID]bool{}, drained: map[escrowID]bool{}}
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
		default:
			b.heldAt[id] = len(b.held)
			b.held, b.heldRaws = append(b.held, env), append(b.heldRaws, raws[i])
		}
		b.escrowed[id] = true
	}
	return nil
}

// release adds elements to R: cancelled with their escrow, or early. An
// element in R already changes nothing; one the drain ran is an error
// (errDrainedTwice).
func (b *escrowBook) release(ids []escrowID) error {
	for _, id := range ids {
		switch {
		case b.released[id]:
			continue
		case b.drained[id]:
			return errDrainedTwice
		case b.escrowed[id]:
			b.unhold(id)
		default:
			b.early[id] = true
		}
		b.released[id] = true
	}
	return nil
}

// unhold removes a held element, moving the last one into its place.
func (b *escrowBook) unhold(id escrowID) {
	i := b.heldAt[id]
	last := len(b.held) - 1
	if i != last {
		b.held[i], b.heldRaws[i] = b.held[last], b.heldRaws[last]
		b.heldAt[idOf(b.held[i])] = i
	}
	delete(b.heldAt, id)
	b.held, b.heldRaws = b.held[:last], b.heldRaws[:last]
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
	case entryRecord:
		return b.applyBody(raw[1:])
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

// applyBody adds a record's body (its escrows, then its releases) to the
// book.
func (b *escrowBook) applyBody(body []byte) error {
	_, part, ids, err := splitBody(body)
	if err != nil {
		return err
	}
	if len(part) > 0 {
		entry, err := state.DecodeEntry(part)
		if err != nil {
			return fmt.Errorf("an entry this version cannot read: %w", err)
		}
		if err := b.escrow(entry.Envelopes, entry.Raws); err != nil {
			return err
		}
	}
	released, err := decodeIDs(ids)
	if err != nil {
		return err
	}
	return b.release(released)
}

// empty reports whether the book holds nothing: no element held, no early
// release, none drained. Its log can then go.
func (b *escrowBook) empty() bool {
	return len(b.held) == 0 && len(b.early) == 0 && b.drainedRaw == nil
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

// earliest is the earliest event time of the held elements (holdNone: none
// held).
func (b *escrowBook) earliest() mtime.Time {
	first := holdNone
	for _, env := range b.held {
		first = min(first, mtime.Time(env.EventTimeMs))
	}
	return first
}

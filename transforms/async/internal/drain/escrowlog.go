package drain

// The record the stream sends per key callback, the entries of the drain's
// log, and the book a log amounts to.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

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

// Book is one key's escrow state, as the sets of elements its log
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
type Book struct {
	// Held and heldRaws are E minus R, in no order; heldAt indexes them.
	Held     []state.Envelope
	heldRaws [][]byte
	heldAt   map[ID]int
	escrowed map[ID]bool // E
	released map[ID]bool // R
	// Early (R minus E) follows from the two sets, and is kept as entries
	// apply rather than derived.
	Early      map[ID]bool
	Drained    map[ID]bool // run by a drain
	DrainedRaw []byte      // their entry
	// Entries is how many log entries were read into the book.
	Entries int
}

func NewBook() *Book {
	return &Book{heldAt: map[ID]int{}, escrowed: map[ID]bool{}, released: map[ID]bool{}, Early: map[ID]bool{}, Drained: map[ID]bool{}}
}

// Escrow adds elements to E: held, or cancelled with their release. An
// element in E already is a copy, and changes nothing; one the drain ran is
// an error (ErrDrainedTwice).
func (b *Book) Escrow(envs []state.Envelope, raws [][]byte) error {
	for i, env := range envs {
		id := IDOf(env)
		switch {
		case b.escrowed[id]:
			continue
		case b.Drained[id]:
			return ErrDrainedTwice
		case b.released[id]:
			delete(b.Early, id)
		default:
			b.heldAt[id] = len(b.Held)
			b.Held, b.heldRaws = append(b.Held, env), append(b.heldRaws, raws[i])
		}
		b.escrowed[id] = true
	}
	return nil
}

// Release adds elements to R: cancelled with their escrow, or early. An
// element in R already changes nothing; one the drain ran is an error
// (ErrDrainedTwice).
func (b *Book) Release(ids []ID) error {
	for _, id := range ids {
		switch {
		case b.released[id]:
			continue
		case b.Drained[id]:
			return ErrDrainedTwice
		case b.escrowed[id]:
			b.unhold(id)
		default:
			b.Early[id] = true
		}
		b.released[id] = true
	}
	return nil
}

// unhold removes a held element, moving the last one into its place.
func (b *Book) unhold(id ID) {
	i := b.heldAt[id]
	last := len(b.Held) - 1
	if i != last {
		b.Held[i], b.heldRaws[i] = b.Held[last], b.heldRaws[last]
		b.heldAt[IDOf(b.Held[i])] = i
	}
	delete(b.heldAt, id)
	b.Held, b.heldRaws = b.Held[:last], b.heldRaws[:last]
}

// Apply adds one entry of the log to the book.
func (b *Book) Apply(raw []byte) error {
	switch raw[0] {
	case EntryEscrow:
		entry, err := state.DecodeEntry(raw[1:])
		if err != nil {
			return fmt.Errorf("an entry this version cannot read: %w", err)
		}
		return b.Escrow(entry.Envelopes, entry.Raws)
	case EntryRelease:
		ids, err := decodeIDs(raw[1:])
		if err != nil {
			return err
		}
		return b.Release(ids)
	case EntryRecord:
		return b.ApplyBody(raw[1:])
	case EntryDrained:
		ids, err := decodeIDs(raw[1:])
		if err != nil {
			return err
		}
		b.DrainedRaw = raw
		for _, id := range ids {
			b.Drained[id] = true
		}
		return nil
	default:
		return fmt.Errorf("an entry of unknown kind %d", raw[0])
	}
}

// ApplyBody adds a record's body (its escrows, then its releases) to the
// book.
func (b *Book) ApplyBody(body []byte) error {
	_, part, ids, err := SplitBody(body)
	if err != nil {
		return err
	}
	if len(part) > 0 {
		entry, err := state.DecodeEntry(part)
		if err != nil {
			return fmt.Errorf("an entry this version cannot read: %w", err)
		}
		if err := b.Escrow(entry.Envelopes, entry.Raws); err != nil {
			return err
		}
	}
	released, err := decodeIDs(ids)
	if err != nil {
		return err
	}
	return b.Release(released)
}

// Empty reports whether the book holds nothing: no element held, no early
// release, none drained. Its log can then go.
func (b *Book) Empty() bool {
	return len(b.Held) == 0 && len(b.Early) == 0 && b.DrainedRaw == nil
}

// Compacted is the log rewritten as the book: held elements, early
// releases and drained elements, without the cancelled pairs.
func (b *Book) Compacted() [][]byte {
	var out [][]byte
	if len(b.heldRaws) > 0 {
		out = append(out, append([]byte{EntryEscrow}, state.EncodeElements(b.heldRaws)...))
	}
	if early := b.EarlyIDs(); len(early) > 0 {
		out = append(out, IDsEntry(EntryRelease, early))
	}
	if b.DrainedRaw != nil {
		out = append(out, b.DrainedRaw)
	}
	return out
}

// EarlyIDs are the early releases, in order.
func (b *Book) EarlyIDs() []ID {
	ids := make([]ID, 0, len(b.Early))
	for id := range b.Early {
		ids = append(ids, id)
	}
	SortIDs(ids)
	return ids
}

func SortIDs(ids []ID) {
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Nonce != ids[j].Nonce {
			return ids[i].Nonce < ids[j].Nonce
		}
		return ids[i].Seq < ids[j].Seq
	})
}

// Earliest is the earliest event time of the held elements (HoldNone: none
// held).
func (b *Book) Earliest() mtime.Time {
	first := HoldNone
	for _, env := range b.Held {
		first = min(first, mtime.Time(env.EventTimeMs))
	}
	return first
}

// ErrDrainedTwice fails the job rather than let it go on silently when the
// stream commits an element the drain ran: the runner fired the drain's
// event-time timer before the watermark reached it, against the Beam model
// (an event-time timer fires once the input watermark passes it, and a
// pending timer upstream holds that watermark at its output timestamp).
// Beam Python's FnApiRunner (apache-beam 2.77) does so
// (integration/watermark_test.go): it runs both DoFns in the stage of an
// unbounded source, whose input watermark is at its maximum from the first
// bundle.
var ErrDrainedTwice = errors.New("the end-of-input drain ran an element that the stream then accepted or committed again, so its outputs may be emitted twice: " +
	"this runner fired the drain's event-time timer before the watermark reached it, while the stream still held the element " +
	"(Beam Python's portable job service does, for stateful DoFns in an unbounded source's stage); run the transform without async.WithEndOfInputDrain() on this runner")

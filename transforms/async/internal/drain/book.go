package drain

// The book a key's log amounts to: what it holds, what came early, and
// what the drain ran.

import (
	"errors"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/asyncbeam/asyncbeam/state"
)

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

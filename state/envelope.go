package state

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The first byte of every bag entry is its tag: it names the entry's kind
// and, for an envelope, its layout. A change of an envelope's layout takes a
// new tag, so that state written by an older build is recognised: tag 3
// added Seq, tag 6 Window; entries tagged 2 and 3 are still read (with Seq
// 0, in the global window), so a pipeline updated in place keeps its state.
const (
	tagEnvelope   byte = 6
	tagEnvelopeV3 byte = 3
	tagEnvelopeV2 byte = 2
	// tagBatch starts an entry that holds several encoded envelopes (see
	// EncodeBatch).
	tagBatch byte = 4
	// tagQueueSummary starts a QueueSummary entry.
	tagQueueSummary byte = 5
	// tagSummed starts an entry that holds envelopes and the key's queue
	// summary (see EncodeWithSummary). Builds before it cannot read it.
	tagSummed byte = 7
)

// QueueSummary describes the elements of a key that wait in a separate bag
// for room, so that a callback knows them without reading that bag: how
// many, their earliest event time (for the timer's watermark hold), their
// highest sequence number (WithOrdered). It also carries what the key's
// elements share: the incarnation of its state (Nonce) and the highest
// sequence number it has given (HighSeq), which must outlive the elements
// that had them (see ElementID). It is written into the bag of
// pending elements; of several, the one with the highest Serial is current.
type QueueSummary struct {
	Serial, Count, MinEventTimeMs, MaxSeq int64
	Nonce                                 uint64
	HighSeq                               int64
}

// Encode returns the summary's bag entry.
func (q QueueSummary) Encode() []byte {
	buf := []byte{tagQueueSummary}
	for _, v := range []int64{q.Serial, q.Count, q.MinEventTimeMs, q.MaxSeq} {
		buf = binary.AppendVarint(buf, v)
	}
	buf = binary.AppendUvarint(buf, q.Nonce)
	return binary.AppendVarint(buf, q.HighSeq)
}

// isQueueSummary reports whether a bag entry is a QueueSummary.
func isQueueSummary(b []byte) bool { return len(b) > 0 && b[0] == tagQueueSummary }

// decodeQueueSummary parses an entry written by QueueSummary.Encode (or by
// a build without Nonce and HighSeq, which read as zero).
func decodeQueueSummary(b []byte) (QueueSummary, error) {
	if !isQueueSummary(b) {
		return QueueSummary{}, fmt.Errorf("%w: not a queue summary", ErrBadEnvelope)
	}
	r := &reader{b: b[1:]}
	q := QueueSummary{Serial: r.varint("serial"), Count: r.varint("count"), MinEventTimeMs: r.varint("earliest event time"), MaxSeq: r.varint("highest sequence number")}
	if r.err == nil && len(r.b) > 0 {
		q.Nonce = r.uvarint("nonce")
		q.HighSeq = r.varint("highest sequence number given")
	}
	if r.err == nil && (len(r.b) != 0 || q.Count < 0) {
		r.err = fmt.Errorf("%w: bad queue summary", ErrBadEnvelope)
	}
	return q, r.err
}

// Envelope is one accepted element as kept in bag state, with its retry
// state: keeping the attempt count and the time of the next attempt here
// means a worker restart or a moved key neither resets the count nor retries
// early.
type Envelope struct {
	// ID identifies the element within its key (see ElementID).
	ID string
	// EventTimeMs is the element's event time in Unix milliseconds.
	EventTimeMs int64
	// Attempts is how many attempts have failed so far.
	Attempts int
	// FirstAttemptMs and LastAttemptMs are when the first and the latest
	// failed attempt started (Unix ms); zero before any failed.
	FirstAttemptMs, LastAttemptMs int64
	// NextAttemptMs is the earliest time the next attempt may start (Unix
	// ms); zero means at once.
	NextAttemptMs int64
	// LastKind and LastError describe the latest failed attempt.
	LastKind, LastError string
	// Seq is the element's place in its key's acceptance order, from 1
	// (zero in entries written with tag 2). A key whose elements are
	// all committed starts again at 1.
	Seq int64
	// Nonce names the incarnation of the key's state the element was
	// accepted in: a key whose bags empty starts a new one (see ElementID).
	Nonce uint64
	// Window is the element's window, encoded by the transform (empty: the
	// global window). The transform keeps a key's elements of every window
	// in one state, in the global window, and puts each output back in its
	// element's window.
	Window string
	// Value is the element's value encoded with the input's value coder.
	Value []byte
}

// Element returns the identity of the element e keeps, of key (encoded).
func (e Envelope) Element(key string) ElementID {
	return ElementID{Key: key, Window: e.Window, ID: e.ID, Nonce: e.Nonce, Seq: e.Seq}
}

// Encode returns e's bag-state bytes: the tag byte; the ID and the last
// kind and error as uvarint-length-prefixed strings, the numbers as varints
// (Seq after the strings), the window as a length-prefixed string; then the
// value bytes to the end.
func (e Envelope) Encode() []byte {
	buf := make([]byte, 0, 1+binary.MaxVarintLen64*10+len(e.ID)+len(e.LastKind)+len(e.LastError)+len(e.Window)+len(e.Value))
	buf = append(buf, tagEnvelope)
	buf = appendString(buf, e.ID)
	buf = binary.AppendVarint(buf, e.EventTimeMs)
	buf = binary.AppendVarint(buf, int64(e.Attempts))
	buf = binary.AppendVarint(buf, e.FirstAttemptMs)
	buf = binary.AppendVarint(buf, e.LastAttemptMs)
	buf = binary.AppendVarint(buf, e.NextAttemptMs)
	buf = appendString(buf, e.LastKind)
	buf = appendString(buf, e.LastError)
	buf = binary.AppendVarint(buf, e.Seq)
	buf = appendString(buf, e.Window)
	buf = binary.AppendUvarint(buf, e.Nonce)
	return append(buf, e.Value...)
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// reader consumes an encoded envelope, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad %s", ErrBadEnvelope, what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad %s", ErrBadEnvelope, what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str(what string) string {
	if r.err != nil {
		return ""
	}
	l, n := binary.Uvarint(r.b)
	if n <= 0 || l > uint64(len(r.b)-n) {
		r.err = fmt.Errorf("%w: bad %s length", ErrBadEnvelope, what)
		return ""
	}
	s := string(r.b[n : n+int(l)])
	r.b = r.b[n+int(l):]
	return s
}

// ErrBadEnvelope is wrapped by every decodeEnvelope error.
var ErrBadEnvelope = errors.New("state: malformed envelope")

// decodeEnvelope parses bytes written by Envelope.Encode. It never panics;
// malformed input gives an error wrapping ErrBadEnvelope. The returned Value
// aliases b.
func decodeEnvelope(b []byte) (Envelope, error) {
	if len(b) == 0 {
		return Envelope{}, fmt.Errorf("%w: empty", ErrBadEnvelope)
	}
	if b[0] != tagEnvelope && b[0] != tagEnvelopeV3 && b[0] != tagEnvelopeV2 {
		return Envelope{}, fmt.Errorf("%w: tag %d, want %d, %d or %d", ErrBadEnvelope, b[0], tagEnvelopeV2, tagEnvelopeV3, tagEnvelope)
	}
	r := &reader{b: b[1:]}
	e := Envelope{ID: r.str("ID"), EventTimeMs: r.varint("event time")}
	attempts := r.varint("attempts")
	if r.err == nil && (attempts < 0 || attempts > 1<<31) {
		r.err = fmt.Errorf("%w: attempts %d out of range", ErrBadEnvelope, attempts)
	}
	e.Attempts = int(attempts)
	e.FirstAttemptMs = r.varint("first attempt time")
	e.LastAttemptMs = r.varint("last attempt time")
	e.NextAttemptMs = r.varint("next attempt time")
	e.LastKind = r.str("last kind")
	e.LastError = r.str("last error")
	if b[0] >= tagEnvelopeV3 {
		e.Seq = r.varint("sequence number")
	}
	if b[0] >= tagEnvelope {
		e.Window = r.str("window")
		e.Nonce = r.uvarint("nonce")
	}
	if r.err != nil {
		return Envelope{}, r.err
	}
	e.Value = r.b
	return e, nil
}

// EncodeBatch returns one bag entry holding several encoded envelopes: the
// batch tag byte, then their number and each envelope's length as
// uvarints, each followed by its bytes. Rewriting a key's elements as one
// entry costs one write to the runner, not one per element.
func EncodeBatch(encoded [][]byte) []byte {
	buf := make([]byte, 0, batchSize(encoded))
	return appendBatch(append(buf, tagBatch), encoded)
}

// EncodeElements returns one bag entry holding encoded envelopes: the
// envelope itself when there is one, else EncodeBatch's entry.
func EncodeElements(encoded [][]byte) []byte {
	if len(encoded) == 1 {
		return encoded[0]
	}
	return EncodeBatch(encoded)
}

// EncodeWithSummary returns one bag entry holding several encoded envelopes
// and the key's queue summary: its tag byte, the summary's length as a
// uvarint and its bytes, then the envelopes as EncodeBatch lays them out
// after its tag byte. Every bag add is its own round trip to the
// runner (two, for the SDK's length prefix): a key's new elements and its
// summary, or its rewrite, cost one add this way, where one per element
// and one for the summary was the rule before.
func EncodeWithSummary(encoded [][]byte, q QueueSummary) []byte {
	sum := q.Encode()
	buf := make([]byte, 0, binary.MaxVarintLen64+len(sum)+batchSize(encoded))
	buf = append(buf, tagSummed)
	buf = binary.AppendUvarint(buf, uint64(len(sum)))
	buf = append(buf, sum...)
	return appendBatch(buf, encoded)
}

func batchSize(encoded [][]byte) int {
	n := 1 + binary.MaxVarintLen64
	for _, e := range encoded {
		n += binary.MaxVarintLen64 + len(e)
	}
	return n
}

// appendBatch appends the number of envelopes, then each one's length and
// bytes.
func appendBatch(buf []byte, encoded [][]byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(encoded)))
	for _, e := range encoded {
		buf = binary.AppendUvarint(buf, uint64(len(e)))
		buf = append(buf, e...)
	}
	return buf
}

// Entry is one decoded bag entry.
type Entry struct {
	// Envelopes are the elements the entry holds, and Raws their encoded
	// bytes (aliasing the entry).
	Envelopes []Envelope
	Raws      [][]byte
	// Summary is the queue summary the entry holds, if any.
	Summary *QueueSummary
}

// DecodeEntry parses one bag entry: a single envelope, a batch of them, a
// queue summary, or envelopes with a summary (EncodeWithSummary). It never
// panics, and wraps ErrBadEnvelope on malformed input.
func DecodeEntry(b []byte) (Entry, error) {
	switch {
	case isQueueSummary(b):
		q, err := decodeQueueSummary(b)
		if err != nil {
			return Entry{}, err
		}
		return Entry{Summary: &q}, nil
	case len(b) > 0 && b[0] == tagSummed:
		rest := b[1:]
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return Entry{}, fmt.Errorf("%w: bad length of the queue summary", ErrBadEnvelope)
		}
		q, err := decodeQueueSummary(rest[k : k+int(l)])
		if err != nil {
			return Entry{}, err
		}
		e, err := decodeBatch(rest[k+int(l):])
		if err != nil {
			return Entry{}, err
		}
		e.Summary = &q
		return e, nil
	case len(b) > 0 && b[0] == tagBatch:
		return decodeBatch(b[1:])
	}
	env, err := decodeEnvelope(b)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Envelopes: []Envelope{env}, Raws: [][]byte{b}}, nil
}

// decodeBatch parses what follows a batch's tag byte.
func decodeBatch(rest []byte) (Entry, error) {
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)) {
		return Entry{}, fmt.Errorf("%w: bad batch count", ErrBadEnvelope)
	}
	rest = rest[k:]
	var e Entry
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return Entry{}, fmt.Errorf("%w: bad length of batch member %d", ErrBadEnvelope, i)
		}
		raw := rest[k : k+int(l) : k+int(l)] // an append to it must not reach the next member
		rest = rest[k+int(l):]
		env, err := decodeEnvelope(raw)
		if err != nil {
			return Entry{}, fmt.Errorf("batch member %d: %w", i, err)
		}
		e.Envelopes, e.Raws = append(e.Envelopes, env), append(e.Raws, raw)
	}
	if len(rest) != 0 {
		return Entry{}, fmt.Errorf("%w: %d bytes after the batch", ErrBadEnvelope, len(rest))
	}
	return e, nil
}

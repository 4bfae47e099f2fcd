package state

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// envelopeVersion is the first byte of every encoded Envelope. A change of
// layout bumps it so that state written by an older version is recognised.
// Version 3 added Seq; version 2 entries are still read (with Seq 0), so a
// pipeline updated in place keeps the state it holds.
const (
	envelopeVersion   byte = 3
	envelopeVersionV2 byte = 2
)

// Envelope is one accepted element as kept in bag state, with its retry
// state: keeping the attempt count and the time of the next attempt here
// means a worker restart or a moved key neither resets the count nor retries
// early.
type Envelope struct {
	// ID identifies the element within its key (see DefaultID).
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
	// Seq is the element's place in its key's acceptance order, from 1;
	// zero when the transform does not keep order (or the entry predates
	// version 3).
	Seq int64
	// Value is the element's value encoded with the input's value coder.
	Value []byte
}

// Encode returns e's bag-state bytes: the version byte; the ID and the last
// kind and error as uvarint-length-prefixed strings, the numbers as varints
// (Seq after the strings); then the value bytes to the end.
func (e Envelope) Encode() []byte {
	buf := make([]byte, 0, 1+binary.MaxVarintLen64*9+len(e.ID)+len(e.LastKind)+len(e.LastError)+len(e.Value))
	buf = append(buf, envelopeVersion)
	buf = appendString(buf, e.ID)
	buf = binary.AppendVarint(buf, e.EventTimeMs)
	buf = binary.AppendVarint(buf, int64(e.Attempts))
	buf = binary.AppendVarint(buf, e.FirstAttemptMs)
	buf = binary.AppendVarint(buf, e.LastAttemptMs)
	buf = binary.AppendVarint(buf, e.NextAttemptMs)
	buf = appendString(buf, e.LastKind)
	buf = appendString(buf, e.LastError)
	buf = binary.AppendVarint(buf, e.Seq)
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

// ErrBadEnvelope is wrapped by every DecodeEnvelope error.
var ErrBadEnvelope = errors.New("state: malformed envelope")

// DecodeEnvelope parses bytes written by Envelope.Encode. It never panics;
// malformed input gives an error wrapping ErrBadEnvelope. The returned Value
// aliases b.
func DecodeEnvelope(b []byte) (Envelope, error) {
	if len(b) == 0 {
		return Envelope{}, fmt.Errorf("%w: empty", ErrBadEnvelope)
	}
	if b[0] != envelopeVersion && b[0] != envelopeVersionV2 {
		return Envelope{}, fmt.Errorf("%w: version %d, want %d or %d", ErrBadEnvelope, b[0], envelopeVersionV2, envelopeVersion)
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
	if b[0] >= 3 {
		e.Seq = r.varint("sequence number")
	}
	if r.err != nil {
		return Envelope{}, r.err
	}
	e.Value = r.b
	return e, nil
}

// DefaultID is the identity of an element whose transform has no ID
// function: the first 16 bytes of the SHA-256 of its encoded value. Two
// elements of one key with equal encoded values are therefore one element.
func DefaultID(encodedValue []byte) string {
	sum := sha256.Sum256(encodedValue)
	return string(sum[:16])
}

// TaskKey identifies an element's task within a transform's Pool: its
// owner, and its ID within that owner. For the stateful DoFns the owner is
// the element's key and window, encoded (so the same value under two keys,
// or in two windows, is two elements); for a bundle of bounded input it is
// the bundle.
type TaskKey struct {
	Owner string
	ID    string
}

package state

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// envelopeVersion is the first byte of every encoded Envelope. A change of
// layout bumps it so that state written by an older version is recognised.
const envelopeVersion byte = 1

// Envelope is one accepted element as kept in bag state.
type Envelope struct {
	// ID identifies the element within its key (see DefaultID).
	ID string
	// EventTimeMs is the element's event time in Unix milliseconds.
	EventTimeMs int64
	// Value is the element's value encoded with the input's value coder.
	Value []byte
}

// Encode returns e's bag-state bytes: version, uvarint length and ID bytes,
// zig-zag varint event time, then the value bytes to the end.
func (e Envelope) Encode() []byte {
	buf := make([]byte, 0, 1+binary.MaxVarintLen64*2+len(e.ID)+len(e.Value))
	buf = append(buf, envelopeVersion)
	buf = binary.AppendUvarint(buf, uint64(len(e.ID)))
	buf = append(buf, e.ID...)
	buf = binary.AppendVarint(buf, e.EventTimeMs)
	return append(buf, e.Value...)
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
	if b[0] != envelopeVersion {
		return Envelope{}, fmt.Errorf("%w: version %d, want %d", ErrBadEnvelope, b[0], envelopeVersion)
	}
	rest := b[1:]
	idLen, n := binary.Uvarint(rest)
	if n <= 0 || idLen > uint64(len(rest)-n) {
		return Envelope{}, fmt.Errorf("%w: bad ID length", ErrBadEnvelope)
	}
	rest = rest[n:]
	id := string(rest[:idLen])
	rest = rest[idLen:]
	ts, n := binary.Varint(rest)
	if n <= 0 {
		return Envelope{}, fmt.Errorf("%w: bad event time", ErrBadEnvelope)
	}
	return Envelope{ID: id, EventTimeMs: ts, Value: rest[n:]}, nil
}

// DefaultID is the identity of an element whose transform has no ID
// function: the first 16 bytes of the SHA-256 of its encoded value. Two
// elements of one key with equal encoded values are therefore one element.
func DefaultID(encodedValue []byte) string {
	sum := sha256.Sum256(encodedValue)
	return string(sum[:16])
}

// TaskKey identifies an element within a transform: its key, as encoded by the
// input's key coder, and its ID within that key. The same value under two keys
// is two elements.
type TaskKey struct {
	Key string
	ID  string
}

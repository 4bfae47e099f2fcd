package state

// Identity: one type names an element wherever the transform keeps or runs
// it (its bag entry, its task in the Pool, its retry's jitter), with one
// encoding.

import (
	"crypto/sha256"
	"encoding/binary"
)

// ElementID names one element of a transform's input. Key, Window and ID say
// which element it is; Nonce and Seq say where its key's state accepted it
// (unbounded input; zero on bounded input, where a bundle is the scope).
//
// ElementID is comparable: equal values name the same element in the same
// incarnation of its key's state. Base drops the incarnation, to compare
// elements regardless of where they were accepted.
type ElementID struct {
	// Key is the element's key, encoded with the input's key coder.
	Key string
	// Window is the element's window, encoded by the transform; empty for
	// the global window. The same ID in two windows is two elements.
	Window string
	// ID names the element within its key and window: what WithIDFn
	// returns, or ValueID of its encoded value with its occurrence (see
	// Occurrence).
	ID string
	// Nonce is the incarnation of the key's state the element was accepted
	// in (a key whose bags empty starts a new one), and Seq its place in
	// that incarnation's acceptance order, from 1. A task that an earlier
	// element with an equal Base left on a worker (committed elsewhere after
	// its key moved, say) is so never taken for this element, while the
	// retry of a failed bundle, which reads the same state and gives its
	// elements the same places, finds the calls it had started.
	Nonce uint64
	Seq   int64
}

// Base returns e without its incarnation (Nonce and Seq zero): two
// accepted records with equal Bases are one element.
func (e ElementID) Base() ElementID { return ElementID{Key: e.Key, Window: e.Window, ID: e.ID} }

// Occurrence returns e with n (from 1), the element's place among the
// records of its key that share its ID, appended to its ID as a uvarint, so
// that two input records with equal values stay two elements.
func (e ElementID) Occurrence(n int64) ElementID {
	e.ID = string(binary.AppendUvarint([]byte(e.ID), uint64(n)))
	return e
}

// Encode returns e's bytes: the key, the window and the ID, each
// uvarint-length-prefixed, then the nonce as a uvarint and the sequence
// number as a varint. Distinct ElementIDs encode differently.
func (e ElementID) Encode() []byte {
	buf := make([]byte, 0, 3*binary.MaxVarintLen64+len(e.Key)+len(e.Window)+len(e.ID)+2*binary.MaxVarintLen64)
	buf = appendString(buf, e.Key)
	buf = appendString(buf, e.Window)
	buf = appendString(buf, e.ID)
	buf = binary.AppendUvarint(buf, e.Nonce)
	return binary.AppendVarint(buf, e.Seq)
}

// ValueID is the ID an element's encoded value gives when the transform has
// no ID function: the first 16 bytes of the value's SHA-256.
func ValueID(encodedValue []byte) string {
	sum := sha256.Sum256(encodedValue)
	return string(sum[:16])
}

// TaskKey identifies an element's task within a transform's Pool: its
// owner and its element. On unbounded input the owner is the element's key
// (Element.Key); on bounded input it is the bundle, so that a bundle's tasks
// go with it.
type TaskKey struct {
	Owner   string
	Element ElementID
}

package terms

// The failure record and what a failed attempt leads to.

import (
	"reflect"

	"github.com/asyncbeam/asyncbeam/state"
)

// Failure is documented for users where the front names it (async's types.go).
type Failure struct {
	// Key and Value are the element's key and value encoded with Beam's
	// default coders for the input's K and V (beam.NewElementEncoder),
	// whatever the input's windowing: DecodeFailure[K, V] gives them back.
	Key, Value []byte
	// KeyText and ValueText print them for people: JSON for a struct, a
	// pointer to a struct, a map or a slice, a Go-quoted string for a
	// []byte, Go's %v otherwise; a text longer than 1 KiB is cut there and
	// ends with "…[cut: N bytes in all]".
	KeyText, ValueText string
	// ElementID is the element's identity within its key and window, in hex.
	ElementID string
	// Window is the element's window, "[start, end)" in Unix milliseconds
	// of event time, or empty for the global window. The record is in that
	// window (and has the element's timestamp), as a plain ParDo's output
	// would be.
	Window string
	// Error is the text of the last attempt's error; Kind is one of KindError,
	// KindTimeout, KindPanic, KindPermanent, KindOverloaded and KindWindow (an
	// element whose window could not be restored: never called, Attempts 0).
	// An Enrich record whose join failed or panicked is KindPermanent
	// (after its lookup's answer, called or cached).
	Error, Kind string
	// Attempts is how many attempts were made, at least 1 but for KindWindow:
	// a task that failed before its call (it waited past its deadline, or
	// its cached answer's join failed) counts one.
	Attempts int
	// FirstAttemptUnixMs and LastAttemptUnixMs are when the first and the
	// last attempt started.
	FirstAttemptUnixMs, LastAttemptUnixMs int64
	// CompensationError is set when the wrapped DoFn's Revert method returned
	// an error or panicked.
	CompensationError string
}

// FailureType is the type of the failure output's elements.
var FailureType = reflect.TypeOf(Failure{})

// FailureError is documented for users where the front names it (async's types.go).
type FailureError struct{ Failure }

func (e *FailureError) Error() string { return e.Failure.Error }

// Outcome is what becomes of an element whose attempt failed: either a retry
// (the envelope to keep, with its next attempt time) or a final failure.
type Outcome struct {
	Retry   *state.Envelope
	Failure *Failure
}

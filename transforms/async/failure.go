package async

import (
	"encoding/hex"
	"fmt"
	"reflect"

	"github.com/asyncbeam/asyncbeam/state"
)

// Failure is the record of an element that failed for good, as written to the
// failure output of ParDoWithFailures.
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

// failureType is the type of the failure output's elements.
var failureType = reflect.TypeOf(Failure{})

// FailureError is the error the wrapped DoFn's Revert method receives: the
// element's committed failure record. errors.As gives its Kind, Attempts and
// the rest.
type FailureError struct{ Failure }

func (e *FailureError) Error() string { return e.Failure.Error }

// outcome is what becomes of an element whose attempt failed: either a retry
// (the envelope to keep, with its next attempt time) or a final failure.
type outcome struct {
	retry   *state.Envelope
	failure *Failure
}

// afterFailure decides the outcome of element env of key whose task t finished
// with err after one attempt: a retry through bag state (see retry.go), or
// a final failure (failedForGood).
func (f *core) afterFailure(key any, kb []byte, env state.Envelope, t *state.Task, err error) (outcome, error) {
	next, kind := f.recordAttempts(env, t, err)
	retry, why := f.retryable(kind, next.Attempts, err)
	if retry {
		return outcome{retry: f.retryLater(key, kb, next, kind, err)}, nil
	}
	failure, ferr := f.failedForGood(key, kb, next, kind, why, err)
	return outcome{failure: failure}, ferr
}

// failedForGood reports the final failure of element env of key, whose
// attempts env records, the last with err (why: a reason to add to its
// text), and returns its failure record. Without a failure output it
// returns an error instead, to fail the key's commit or the bundle (the
// wrapped fn's Revert runs only for a failure record that is committed: see
// revertFn).
func (f *core) failedForGood(key any, kb []byte, env state.Envelope, kind, why string, err error) (*Failure, error) {
	if why != "" {
		env.LastError += " (" + why + ")"
	}
	var failure *Failure
	if f.HasFailures {
		var derr error
		if failure, derr = f.failureRecord(key, kb, env, kind); derr != nil {
			return nil, derr
		}
	}
	f.event(EventFailed, key, env.ID, env.Attempts, func(e *Event) { e.Kind, e.Error = kind, env.LastError })
	if !f.HasFailures {
		return nil, fmt.Errorf("async: element %x of key %v failed for good after %d attempt(s) (kind %s); without a failure output (ParDoWithFailures) the commit of its key fails: %w",
			env.ID, key, env.Attempts, kind, err)
	}
	return failure, nil
}

// failureRecord is the Failure of an element whose attempts are recorded in
// env.
func (f *core) failureRecord(key any, kb []byte, env state.Envelope, kind string) (*Failure, error) {
	value, err := f.decodeValue(key, env.Value)
	if err != nil {
		return nil, err
	}
	return &Failure{
		Key: kb, Value: env.Value, KeyText: failureText(key), ValueText: failureText(value),
		ElementID: hex.EncodeToString([]byte(env.ID)), Window: env.Window, Error: env.LastError, Kind: kind,
		Attempts: env.Attempts, FirstAttemptUnixMs: env.FirstAttemptMs, LastAttemptUnixMs: env.LastAttemptMs,
	}, nil
}

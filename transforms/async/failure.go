package async

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/asyncbeam/asyncbeam/state"
)

// Failure is the record of an element that failed for good, as written to the
// failure output of ParDoWithFailures. Key and Value are the element's key and
// value encoded with the input's coders (decode them with
// beam.NewElementDecoder of the input's key and value types); KeyText and
// ValueText print them for people.
type Failure struct {
	Key, Value         []byte
	KeyText, ValueText string
	// ElementID is the element's identity within its key, in hex.
	ElementID string
	// Error is the text of the last attempt's error; Kind is one of KindError,
	// KindTimeout, KindPanic and KindPermanent.
	Error, Kind string
	// Attempts is how many attempts were made.
	Attempts int
	// FirstAttemptUnixMs and LastAttemptUnixMs are when the first and the
	// last attempt started.
	FirstAttemptUnixMs, LastAttemptUnixMs int64
	// CompensationError is set when the wrapped DoFn's Revert method returned
	// an error or panicked.
	CompensationError string
}

// FailureError is the error the wrapped DoFn's Revert method receives: the
// element's committed failure record. errors.As gives its Kind, Attempts and
// the rest.
type FailureError struct{ Failure }

func (e *FailureError) Error() string { return e.Failure.Error }

// kindOf classifies a failed attempt's error.
func kindOf(err error) string {
	var perm *permanentError
	var timeout *timeoutError
	var panicked *state.PanicError
	switch {
	case errors.As(err, &perm):
		return KindPermanent
	case errors.As(err, &timeout):
		return KindTimeout
	case errors.As(err, &panicked):
		return KindPanic
	}
	return KindError
}

// outcome is what becomes of an element whose attempt failed: either a retry
// (the envelope to keep, with its next attempt time) or a final failure.
type outcome struct {
	retry   *state.Envelope
	failure *Failure
}

// settle decides the outcome of element env of key whose task t finished
// with err (after one attempt, or several if it retried locally). Without a
// failure output a final failure is returned as an error, to fail the key's
// commit (the wrapped fn's Revert runs only for a failure record that is
// committed: see revertFn).
func (f *core) settle(ctx context.Context, key any, kb []byte, env state.Envelope, t *state.Task, err error) (outcome, error) {
	kind := kindOf(err)
	next := env
	next.Attempts += max(t.Attempts(), 1)
	first, last := t.FirstStartedAt(), t.StartedAt()
	if last.IsZero() { // cancelled before it started
		first, last = f.clock.Now(), f.clock.Now()
	}
	if next.FirstAttemptMs == 0 {
		next.FirstAttemptMs = first.UnixMilli()
	}
	next.LastAttemptMs = last.UnixMilli()
	next.LastKind, next.LastError = kind, err.Error()
	retry, why := f.retryable(kind, next.Attempts, err)
	if retry {
		delay := f.Backoff.Delay(next.Attempts, append(append([]byte(nil), kb...), env.ID...))
		next.NextAttemptMs = f.clock.Now().Add(delay).UnixMilli()
		f.event(EventRetrying, key, env.ID, next.Attempts, func(e *Event) { e.Delay, e.Kind, e.Error = delay, kind, next.LastError })
		return outcome{retry: &next}, nil
	}
	if why != "" {
		next.LastError += " (" + why + ")"
	}
	value, derr := decode(f.valDec, env.Value)
	if derr != nil {
		return outcome{}, fmt.Errorf("async: decoding a value of key %v from bag state: %w", key, derr)
	}
	failure := &Failure{
		Key: kb, Value: env.Value, KeyText: fmt.Sprint(key), ValueText: fmt.Sprint(value),
		ElementID: hex.EncodeToString([]byte(env.ID)), Error: next.LastError, Kind: kind,
		Attempts: next.Attempts, FirstAttemptUnixMs: next.FirstAttemptMs, LastAttemptUnixMs: next.LastAttemptMs,
	}
	f.event(EventFailed, key, env.ID, next.Attempts, func(e *Event) { e.Kind, e.Error = kind, next.LastError })
	if !f.HasFailures {
		return outcome{}, fmt.Errorf("async: element %x of key %v failed for good after %d attempt(s) (kind %s); without a failure output (ParDoWithFailures) the commit of its key fails: %w",
			env.ID, key, next.Attempts, kind, err)
	}
	return outcome{failure: failure}, nil
}

// retryable says whether a failed attempt is retried, and if not because of
// a broken predicate, why.
func (f *core) retryable(kind string, attempts int, err error) (ok bool, why string) {
	if kind == KindPermanent || attempts >= f.MaxAttempts {
		return false, ""
	}
	if f.RetryIf == nil {
		return true, ""
	}
	defer func() {
		if r := recover(); r != nil {
			ok, why = false, fmt.Sprintf("the WithRetryIf function panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return f.RetryIf.Fn.Call([]any{err})[0].(bool), ""
}

// revertShape is quoted by errors about the compensation method.
const revertShape = "Revert([ctx context.Context,] key K, value V, err error) [error]"

// checkRevert checks the optional compensation method of a DoFn struct.
func checkRevert(ft reflect.Type, keyT, valT reflect.Type) error {
	in := make([]reflect.Type, 0, ft.NumIn())
	for i := 0; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	if len(in) > 0 && in[0] == contextType {
		in = in[1:]
	}
	if len(in) != 3 || !keyT.AssignableTo(in[0]) || !valT.AssignableTo(in[1]) || in[2] != errorType || checkReturnsOnlyError(ft) != nil {
		return fmt.Errorf("Revert has signature %v; want %s with K=%v, V=%v", ft, revertShape, keyT, valT)
	}
	return nil
}

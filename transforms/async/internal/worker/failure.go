package worker

// What happens to an element whose call failed: a retry later, or a failure
// record.

import (
	"encoding/hex"
	"fmt"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// AfterFailure decides the outcome of element env of key whose task t finished
// with err after one attempt: a retry through bag state (see retry.go), or
// a final failure (FailedForGood).
func (f *Core) AfterFailure(key any, kb []byte, env state.Envelope, t *state.Task, err error) (terms.Outcome, error) {
	next, kind := f.RecordAttempts(env, t, err)
	retry, why := f.Retryable(kind, next.Attempts, err)
	if retry {
		return terms.Outcome{Retry: f.retryLater(key, kb, next, kind, err)}, nil
	}
	failure, ferr := f.FailedForGood(key, kb, next, kind, why, err)
	return terms.Outcome{Failure: failure}, ferr
}

// FailedForGood reports the final failure of element env of key, whose
// attempts env records, the last with err (why: a reason to add to its
// text), and returns its failure record. Without a failure output it
// returns an error instead, to fail the key's commit or the bundle (the
// wrapped fn's Revert runs only for a failure record that is committed: see
// revertFn).
func (f *Core) FailedForGood(key any, kb []byte, env state.Envelope, kind, why string, err error) (*terms.Failure, error) {
	if why != "" {
		env.LastError += " (" + why + ")"
	}
	var failure *terms.Failure
	if f.HasFailures {
		var derr error
		if failure, derr = f.failureRecord(key, kb, env, kind); derr != nil {
			return nil, derr
		}
	}
	f.Event(terms.EventFailed, key, env.ID, env.Attempts, func(e *terms.Event) { e.Kind, e.Error = kind, env.LastError })
	if !f.HasFailures {
		return nil, fmt.Errorf("async: element %x of key %v failed for good after %d attempt(s) (kind %s); without a failure output (ParDoWithFailures) the commit of its key fails: %w",
			env.ID, key, env.Attempts, kind, err)
	}
	return failure, nil
}

// failureRecord is the Failure of an element whose attempts are recorded in
// env.
func (f *Core) failureRecord(key any, kb []byte, env state.Envelope, kind string) (*terms.Failure, error) {
	value, err := f.DecodeValue(key, env.Value)
	if err != nil {
		return nil, err
	}
	return &terms.Failure{
		Key: kb, Value: env.Value, KeyText: terms.FailureText(key), ValueText: terms.FailureText(value),
		ElementID: hex.EncodeToString([]byte(env.ID)), Window: env.Window, Error: env.LastError, Kind: kind,
		Attempts: env.Attempts, FirstAttemptUnixMs: env.FirstAttemptMs, LastAttemptUnixMs: env.LastAttemptMs,
	}, nil
}

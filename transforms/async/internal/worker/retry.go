package worker

// The retry policy at run time: which failures are retried, in the worker
// or later from bag state, and how attempts are counted.

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// Retryable says whether an element whose attempt failed with err, after
// attempts attempts in all, is retried, and if not because of a broken
// predicate, why.
func (f *Core) Retryable(kind string, attempts int, err error) (ok bool, why string) {
	if kind == terms.KindPermanent || attempts >= f.MaxAttempts {
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
	return f.RetryIf.Func().Call([]any{err})[0].(bool), ""
}

// inWorkerRetry is the pool's retry policy for a task when RetryInWorker is
// set (nil otherwise): the same decision and backoff as a retry through bag
// state, counting the done attempts made before this task. A decision to
// stop goes to el.Verdict, where the final failure reads it.
func (f *Core) inWorkerRetry(el Element) state.Retry {
	if !f.RetryInWorker {
		return nil
	}
	key, id, done, verdict := el.Key, el.ID.ID, el.Done, el.Verdict
	seed := el.ID.Base().Encode()
	return func(attempt int, err error) (time.Duration, bool) {
		total := done + attempt
		kind := terms.KindOf(err)
		if ok, why := f.Retryable(kind, total, err); !ok {
			if verdict != nil {
				*verdict = RetryVerdict{Declined: true, Why: why}
			}
			return 0, false
		}
		delay := max(f.Backoff.Delay(total, seed), OverloadWait(err))
		f.Event(terms.EventRetrying, key, id, total, func(e *terms.Event) { e.Delay, e.Kind, e.Error = delay, kind, err.Error() })
		return delay, true
	}
}

// RecordAttempts adds the attempts of task t, the last of which failed with
// err, to the element's envelope env, and returns it with the error's kind.
func (f *Core) RecordAttempts(env state.Envelope, t *state.Task, err error) (state.Envelope, string) {
	kind := terms.KindOf(err)
	env.Attempts += max(t.Attempts(), 1)
	first, last := t.FirstStartedAt(), t.StartedAt()
	if last.IsZero() { // cancelled before it started
		first, last = f.clock.Now(), f.clock.Now()
	}
	if env.FirstAttemptMs == 0 {
		env.FirstAttemptMs = first.UnixMilli()
	}
	env.LastAttemptMs = last.UnixMilli()
	env.LastKind, env.LastError = kind, err.Error()
	return env, kind
}

// retryLater returns env, to be written back to bag state, due after its
// backoff, or after the wait an overload answer (err) asked for if longer.
func (f *Core) retryLater(key any, kb []byte, env state.Envelope, kind string, err error) *state.Envelope {
	delay := max(f.Backoff.Delay(env.Attempts, env.Element(string(kb)).Base().Encode()), OverloadWait(err))
	env.NextAttemptMs = f.clock.Now().Add(delay).UnixMilli()
	f.Event(terms.EventRetrying, key, env.ID, env.Attempts, func(e *terms.Event) { e.Delay, e.Kind, e.Error = delay, kind, env.LastError })
	return &env
}

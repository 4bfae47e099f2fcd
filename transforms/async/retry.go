package async

// Retries, in one place: when an element is retried, and where it waits.
//
// When. An attempt fails when the wrapped fn returns an error, panics, or
// outlives WithCallTimeout (core.go: work, callWithin; the pool turns a panic
// into a state.PanicError with its stack), and kindOf names the kind.
// retryable decides: never for Permanent(err) or after WithMaxAttempts
// attempts, otherwise what WithRetryIf says (by default yes). The wait is
// Backoff.Delay of the element's attempt count, a pure function of the
// element, so every worker computes the same one.
//
// Where, on unbounded input (streamFn). The task ends with its error. The
// key's next callback resolves it (failure.go: afterFailure): recordAttempts counts
// the attempts into the element's envelope, and retryLater writes it back to
// bag state with the time of its next attempt. A callback of the key at or
// after that time starts it again (commit.go). A waiting retry holds no slot,
// no place and no memory, and survives a worker restart.
//
// Where, on bounded input (bundleFn: config.RetryInWorker). A bundle
// has no later callback to write a retry back to, so the retry waits in the
// worker: inWorkerRetry is the task's state.Retry, and the pool
// (state/attempt.go) waits out the delay on a timer, holding no
// goroutine, slot or place in flight (state/slots.go: pause), then runs the
// next attempt in the same task, whose count continues the element's.
//
// An element that is not retried fails for good (failure.go: afterFailure): a
// Failure record, or a failed commit without a failure output.

import (
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"

	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"runtime/debug"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/guard"
)

// Failure kinds, as they appear in Failure.Kind.
const (
	KindError     = "error"     // the fn returned an error
	KindTimeout   = "timeout"   // the attempt outlived WithCallTimeout
	KindPanic     = "panic"     // the fn panicked; the error carries the stack
	KindPermanent = "permanent" // the fn returned Permanent(err): not retried
	// KindWindow: the element's window cannot be given back to its outputs
	// from its timestamp (a session a GroupByKey merged, or a timestamp a
	// DoFn moved out of its window); it was not called (Attempts 0), and
	// Revert does not run for it.
	KindWindow = "window"
)

// Permanent marks err as permanent: the element is not retried, whatever the
// retry options say, and fails for good with kind "permanent". Permanent(nil)
// is nil.
func Permanent(err error) error { return wrapped.PermanentOf(err) }

// timeoutError is an attempt that outlived its call timeout.
type timeoutError struct {
	limit time.Duration
	err   error
}

func (t *timeoutError) Error() string {
	if t.err == nil {
		return fmt.Sprintf("call timed out after %v", t.limit)
	}
	return fmt.Sprintf("call timed out after %v: %v", t.limit, t.err)
}
func (t *timeoutError) Unwrap() error { return t.err }

// Backoff is the delay before a retry: Initial for the first retry, multiplied
// by Multiplier for each further one, capped at Max, and shortened by up to
// Jitter (a share, 0 to 1) of itself. The jitter is a hash of the element and
// its attempt number, so every worker computes the same delay and no backoff
// state is shared between elements.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64
}

// ExponentialBackoff doubles the delay from initial up to max, with 20% jitter.
func ExponentialBackoff(initial, max time.Duration) Backoff {
	return Backoff{Initial: initial, Max: max, Multiplier: 2, Jitter: 0.2}
}

// FixedBackoff waits d before every retry.
func FixedBackoff(d time.Duration) Backoff {
	return Backoff{Initial: d, Max: d, Multiplier: 1}
}

// DefaultBackoff is ExponentialBackoff(100 ms, 30 s).
var DefaultBackoff = ExponentialBackoff(100*time.Millisecond, 30*time.Second)

func (b Backoff) validate() error {
	switch {
	case b.Initial < 0:
		return fmt.Errorf("WithBackoff: Initial %v must be >= 0", b.Initial)
	case b.Max < b.Initial:
		return fmt.Errorf("WithBackoff: Max %v must be >= Initial %v", b.Max, b.Initial)
	case b.Multiplier < 1 || math.IsNaN(b.Multiplier) || math.IsInf(b.Multiplier, 0):
		return fmt.Errorf("WithBackoff: Multiplier %v must be a number >= 1", b.Multiplier)
	case b.Jitter < 0 || b.Jitter > 1 || math.IsNaN(b.Jitter):
		return fmt.Errorf("WithBackoff: Jitter %v must be between 0 and 1", b.Jitter)
	}
	return nil
}

// Delay returns the wait before retry number retry (1 for the first retry)
// of the element identified by seed: never negative, never more than Max.
func (b Backoff) Delay(retry int, seed []byte) time.Duration {
	d := float64(b.Initial) * math.Pow(b.Multiplier, float64(max(retry, 1)-1))
	// Past the float range the power is +Inf, and 0 x +Inf is NaN: both mean
	// the cap.
	if math.IsNaN(d) || d > float64(b.Max) {
		d = float64(b.Max)
	}
	if b.Jitter > 0 {
		h := fnv.New64a()
		h.Write(seed)
		h.Write(binary.AppendVarint(nil, int64(retry)))
		u := float64(h.Sum64()%1_000_000) / 1_000_000
		d *= 1 - b.Jitter*u
	}
	// float64(Max) may round above the largest Duration, whose conversion
	// back is negative: clamp in integer space.
	if out := time.Duration(d); out >= 0 && out <= b.Max {
		return out
	}
	return b.Max
}

// WithCallTimeout sets a deadline per attempt: the attempt's context is
// cancelled at the deadline and the attempt fails with kind "timeout". A fn
// that ignores its context keeps its pool slot until it returns (the
// parallelism bound holds), and its late result still counts as a timeout.
// Zero means no deadline. Must be >= 0. Default: 0.
func WithCallTimeout(d time.Duration) Option {
	return func(s *settings) {
		if d < 0 {
			s.errs = append(s.errs, fmt.Errorf("WithCallTimeout(%v): the timeout must be >= 0", d))
			return
		}
		s.callTimeout = d
	}
}

// WithMaxAttempts sets how many attempts an element gets before it fails for
// good. Must be >= 1. Default: 1 (no retries).
func WithMaxAttempts(n int) Option {
	return func(s *settings) {
		if n < 1 {
			s.errs = append(s.errs, fmt.Errorf("WithMaxAttempts(%d): want at least 1 attempt", n))
			return
		}
		s.maxAttempts = n
	}
}

// WithBackoff sets the delay between attempts. A retrying element waits in
// bag state, holding no pool slot. Default: DefaultBackoff.
func WithBackoff(b Backoff) Option {
	return func(s *settings) {
		if err := b.validate(); err != nil {
			s.errs = append(s.errs, err)
			return
		}
		s.backoff = b
	}
}

// WithRetryIf sets which failed attempts are retried: fn is a registered top-level
// function func(error) bool, called with the attempt's error (timeouts and
// panics included; Permanent errors are never retried). Default: retry every
// error.
func WithRetryIf(fn func(error) bool) Option {
	return func(s *settings) { s.retryIf = fn }
}

// WithFallbacks gives values per attempt, such as endpoints or model names to
// try in turn (TaskFlow's ForEach retry): attempt i reads values[i-1] with
// Fallback, and attempts past the end read the last value.
func WithFallbacks(values ...string) Option {
	return func(s *settings) {
		if len(values) == 0 {
			s.errs = append(s.errs, errors.New("WithFallbacks: give at least one value"))
			return
		}
		s.fallbacks = append([]string(nil), values...)
	}
}

type attemptKey struct{}

type attemptInfo struct {
	number   int
	fallback string
	hasValue bool
}

// Attempt returns the number of the current attempt (1 for the first) from
// the context given to the wrapped fn, or 0 outside of one.
func Attempt(ctx context.Context) int {
	a, _ := ctx.Value(attemptKey{}).(attemptInfo)
	return a.number
}

// Fallback returns the current attempt's value from WithFallbacks, and
// whether there is one.
func Fallback(ctx context.Context) (string, bool) {
	a, _ := ctx.Value(attemptKey{}).(attemptInfo)
	return a.fallback, a.hasValue
}

// withAttempt puts the attempt number and its fallback value in ctx.
func withAttempt(ctx context.Context, number int, fallbacks []string) context.Context {
	a := attemptInfo{number: number}
	if len(fallbacks) > 0 {
		a.fallback, a.hasValue = fallbacks[min(number, len(fallbacks))-1], true
	}
	return context.WithValue(ctx, attemptKey{}, a)
}

// kindOf classifies a failed attempt's error.
func kindOf(err error) string {
	var perm *wrapped.PermanentError
	var timeout *timeoutError
	var panicked *state.PanicError
	switch {
	case errors.As(err, &perm):
		return KindPermanent
	case errors.As(err, new(*guard.OverloadError)):
		return KindOverloaded
	case errors.As(err, &timeout):
		return KindTimeout
	case errors.As(err, &panicked):
		return KindPanic
	}
	return KindError
}

// retryable says whether an element whose attempt failed with err, after
// attempts attempts in all, is retried, and if not because of a broken
// predicate, why.
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
	return f.RetryIf.Func().Call([]any{err})[0].(bool), ""
}

// retryVerdict is the in-worker retry policy's decision to stop retrying an
// element (declined), and why when its error does not say it (WithRetryIf
// panicked). A task that ended on an error without one ended on an error
// the policy never saw.
type retryVerdict struct {
	declined bool
	why      string
}

// inWorkerRetry is the pool's retry policy for a task when RetryInWorker is
// set (nil otherwise): the same decision and backoff as a retry through bag
// state, counting the done attempts made before this task. A decision to
// stop goes to el.verdict, where the final failure reads it.
func (f *core) inWorkerRetry(el element) state.Retry {
	if !f.RetryInWorker {
		return nil
	}
	key, id, done, verdict := el.key, el.eid.ID, el.done, el.verdict
	seed := el.eid.Base().Encode()
	return func(attempt int, err error) (time.Duration, bool) {
		total := done + attempt
		kind := kindOf(err)
		if ok, why := f.retryable(kind, total, err); !ok {
			if verdict != nil {
				*verdict = retryVerdict{declined: true, why: why}
			}
			return 0, false
		}
		delay := max(f.Backoff.Delay(total, seed), overloadWait(err))
		f.event(EventRetrying, key, id, total, func(e *Event) { e.Delay, e.Kind, e.Error = delay, kind, err.Error() })
		return delay, true
	}
}

// recordAttempts adds the attempts of task t, the last of which failed with
// err, to the element's envelope env, and returns it with the error's kind.
func (f *core) recordAttempts(env state.Envelope, t *state.Task, err error) (state.Envelope, string) {
	kind := kindOf(err)
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
func (f *core) retryLater(key any, kb []byte, env state.Envelope, kind string, err error) *state.Envelope {
	delay := max(f.Backoff.Delay(env.Attempts, env.Element(string(kb)).Base().Encode()), overloadWait(err))
	env.NextAttemptMs = f.clock.Now().Add(delay).UnixMilli()
	f.event(EventRetrying, key, env.ID, env.Attempts, func(e *Event) { e.Delay, e.Kind, e.Error = delay, kind, env.LastError })
	return &env
}

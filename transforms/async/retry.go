package async

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"
)

// Failure kinds, as they appear in Failure.Kind.
const (
	KindError     = "error"     // the fn returned an error
	KindTimeout   = "timeout"   // the attempt outlived WithCallTimeout
	KindPanic     = "panic"     // the fn panicked; the error carries the stack
	KindPermanent = "permanent" // the fn returned Permanent(err): not retried
)

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

// Permanent marks err as permanent: the element is not retried, whatever the
// retry options say, and fails for good with kind "permanent". Permanent(nil)
// is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

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
	return time.Duration(d)
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

// WithRetryIf sets which failed attempts are retried: fn is a top-level
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

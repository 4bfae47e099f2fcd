package async

// The retry options. How they act (internal/worker/retry.go and
// failure.go), in short:
//
// When. An attempt fails when the wrapped fn returns an error, panics, or
// outlives WithCallTimeout (the pool turns a panic into a state.PanicError
// with its stack), and terms.KindOf names the kind. The worker retries
// never for Permanent(err) or after WithMaxAttempts attempts, otherwise as
// WithRetryIf says (by default yes). The wait is Backoff.Delay of the
// element's attempt count, a pure function of the element, so every worker
// computes the same one.
//
// Where, on unbounded input (streamFn). The task ends with its error. The
// key's next callback counts the attempts into the element's envelope and
// writes it back to bag state with the time of its next attempt; a callback
// of the key at or after that time starts it again (internal/stream). A waiting
// retry holds no slot, no place and no memory, and survives a worker
// restart.
//
// Where, on bounded input (bundleFn: Config.RetryInWorker). A bundle has no
// later callback to write a retry back to, so the retry waits in the
// worker: the pool (state/attempt.go) waits out the delay on a timer,
// holding no goroutine, slot or place in flight, then runs the next attempt
// in the same task, whose count continues the element's.
//
// An element that is not retried fails for good: a Failure record, or a
// failed commit without a failure output.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// Permanent marks err as permanent: the element is not retried, whatever the
// retry options say, and fails for good with kind "permanent". Permanent(nil)
// is nil.
func Permanent(err error) error { return wrapped.PermanentOf(err) }

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
		if err := checkBackoff(b); err != nil {
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

// Attempt returns the number of the current attempt (1 for the first) from
// the context given to the wrapped fn, or 0 outside of one.
func Attempt(ctx context.Context) int {
	a, _ := ctx.Value(terms.AttemptKey{}).(terms.AttemptInfo)
	return a.Number
}

// Fallback returns the current attempt's value from WithFallbacks, and
// whether there is one.
func Fallback(ctx context.Context) (string, bool) {
	a, _ := ctx.Value(terms.AttemptKey{}).(terms.AttemptInfo)
	return a.Fallback, a.HasValue
}

// checkBackoff refuses a Backoff that WithBackoff cannot use, saying why.
func checkBackoff(b Backoff) error {
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

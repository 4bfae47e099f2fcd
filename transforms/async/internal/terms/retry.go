package terms

// Failure kinds, the backoff between attempts, and the attempt a call is
// in, carried in its context.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
	"github.com/asyncbeam/asyncbeam/transforms/guard"
)

// Failure kinds, as they appear in Failure.Kind.
const (
	KindError     = "error"
	KindTimeout   = "timeout"
	KindPanic     = "panic"
	KindPermanent = "permanent"
	KindWindow    = "window"
)

// TimeoutError is an attempt that outlived its call timeout.
type TimeoutError struct {
	Limit time.Duration
	Err   error
}

func (t *TimeoutError) Error() string {
	if t.Err == nil {
		return fmt.Sprintf("call timed out after %v", t.Limit)
	}
	return fmt.Sprintf("call timed out after %v: %v", t.Limit, t.Err)
}

func (t *TimeoutError) Unwrap() error { return t.Err }

// Backoff is documented for users where the front names it (async's types.go).
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64
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

type AttemptKey struct{}

type AttemptInfo struct {
	Number   int
	Fallback string
	HasValue bool
}

// WithAttempt puts the attempt number and its fallback value in ctx.
func WithAttempt(ctx context.Context, number int, fallbacks []string) context.Context {
	a := AttemptInfo{Number: number}
	if len(fallbacks) > 0 {
		a.Fallback, a.HasValue = fallbacks[min(number, len(fallbacks))-1], true
	}
	return context.WithValue(ctx, AttemptKey{}, a)
}

// KindOf classifies a failed attempt's error.
func KindOf(err error) string {
	var perm *wrapped.PermanentError
	var timeout *TimeoutError
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

package guard

import (
	"errors"
	"fmt"
	"time"
)

// OverloadError marks an error as the service saying "too much": an HTTP 429
// or 503, a gRPC RESOURCE_EXHAUSTED, a database refusing connections. Such
// answers slow the whole pool down (see Throttle and Adaptive) and their
// retries are budgeted (see Budget); an ordinary error affects only its own
// element.
type OverloadError struct {
	Err error
	// RetryAfter is how long the service asked callers to wait (HTTP
	// Retry-After), or zero when it did not say.
	RetryAfter time.Duration
}

func (o *OverloadError) Error() string {
	if o.RetryAfter > 0 {
		return fmt.Sprintf("overloaded (retry after %v): %v", o.RetryAfter, o.Err)
	}
	return fmt.Sprintf("overloaded: %v", o.Err)
}

func (o *OverloadError) Unwrap() error { return o.Err }

// Overloaded marks err as an overload answer. Overloaded(nil) is nil.
func Overloaded(err error, retryAfter time.Duration) error {
	if err == nil {
		return nil
	}
	return &OverloadError{Err: err, RetryAfter: max(retryAfter, 0)}
}

// IsOverloaded reports whether err (or an error it wraps) is an overload
// answer, and the wait the service asked for.
func IsOverloaded(err error) (bool, time.Duration) {
	var o *OverloadError
	if errors.As(err, &o) {
		return true, o.RetryAfter
	}
	return false, 0
}

// Outcome is how an attempt ended, as the policies see it.
type Outcome int

const (
	// Succeeded: the call returned without error.
	Succeeded Outcome = iota
	// Failed: an ordinary error; the service answered, so it counts as
	// accepted, but its latency says nothing about the service's queue.
	Failed
	// TimedOut: the attempt outlived its deadline. A limiter must not read
	// its latency (the deadline, the same for every such call) as the
	// service's, or it would grow the limit while every call times out.
	TimedOut
	// Overload: the service refused the call for load.
	Overload
	// Abandoned: the attempt was cancelled by the caller (its element
	// went away); it says nothing about the service.
	Abandoned
)

func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	case TimedOut:
		return "timed out"
	case Overload:
		return "overload"
	case Abandoned:
		return "abandoned"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

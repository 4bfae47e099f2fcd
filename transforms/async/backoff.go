package async

// Backoffs: the waits between attempts that WithBackoff takes.

import (
	"time"
)

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

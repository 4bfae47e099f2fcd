package guard

import (
	"context"

	"golang.org/x/time/rate"
)

// Rate spaces out the starts of calls.
type Rate interface {
	// Wait blocks until one more call may start, or ctx ends.
	Wait(ctx context.Context) error
}

// LocalRate is a token bucket of this process: perSecond calls a second on
// average, up to burst at once.
func LocalRate(perSecond float64, burst int) Rate {
	return rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))
}

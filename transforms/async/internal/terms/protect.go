package terms

// How a transform protects its service: the throttle's and the adaptive
// limit's settings as ParDo decided them, and the kind of a refused call.

import (
	"github.com/asyncbeam/asyncbeam/transforms/guard"
)

// KindOverloaded is documented for users where the front names it (async's types.go).
const KindOverloaded = "overloaded"

// Protection is what the options above decided, shipped to workers in the
// Config.
type Protection struct {
	RatePerSecond            float64
	RateBurst                int
	Shared                   *guard.SharedRateConfig
	AdaptiveMin, AdaptiveMax int
	BudgetShare              float64
	// OverloadThreshold is WithOverloadThreshold's share; zero (a config
	// made without the options) means the default.
	OverloadThreshold float64
}

// throttleK is the multiplier of the worker's throttle (guard.ThrottleK).
func (p Protection) ThrottleK() float64 {
	if !(p.OverloadThreshold > 0 && p.OverloadThreshold < 1) {
		return guard.ThrottleK(DefaultOverloadThreshold)
	}
	return guard.ThrottleK(p.OverloadThreshold)
}

// Far above: worker.ParallelismWarning speaks when the service refuses more than
// WarnRefusedShare of its answers for load, while the fixed parallelism is
// at least warnFactor times the calls it accepts at once and the calls at
// the service when it refused were at least warnCrowd times those (it
// refuses for the calls at once, not at random).
const (
	WarnRefusedShare = 0.1
	WarnFactor       = 4
	WarnCrowd        = 2
)

// DefaultOverloadThreshold is documented for users where the front names it (async's types.go).
const DefaultOverloadThreshold = 0.2

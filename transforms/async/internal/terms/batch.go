package terms

// A BatchParDo's batching, as ParDo decided it.

import (
	"time"
)

// BatchSpec is a BatchParDo's batching, shipped in the config.
type BatchSpec struct {
	Size   int
	Wait   time.Duration
	PerKey bool
}

package terms

import (
	"time"
)

// moved

// BatchSpec is a BatchParDo's batching, shipped in the config.
type BatchSpec struct {
	Size   int
	Wait   time.Duration
	PerKey bool
}

package async

// The options' settings: what Options write, with their defaults, before
// resolve (config.go) checks the combination and fills in what depends on
// other options.

import (
	"time"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/guard"
)

// Defaults of the options.
const (
	DefaultParallelism       = 16
	DefaultCallbackFrequency = time.Second
	DefaultMaxWait           = time.Duration(0)
)

// Option configures ParDo. Invalid values are reported by TryParDo (ParDo
// panics with the same error) at pipeline construction.
type Option func(*settings)

// settings are what the Options write. A zero buffer or held means the
// default, which resolve derives from the parallelism (and the batch size).
type settings struct {
	parallelism       int
	callbackFrequency time.Duration
	buffer            int // 0: default from parallelism
	held              int // 0: default from parallelism and buffer
	maxWait           time.Duration
	idFn              any
	callTimeout       time.Duration
	maxAttempts       int
	backoff           Backoff
	retryIf           func(error) bool
	fallbacks         []string
	ordered           bool
	priorityFn        any
	listeners         []Listener
	protect           terms.Protection
	cache             *Cache
	noCache           bool // WithoutCache
	drain             bool // the end-of-input drain runs (see resolveDrain)
	drainSet          bool // WithEndOfInputDrain or WithoutEndOfInputDrain was given
	batch             batchSettings
	// parallelismSet: WithParallelism was given (it conflicts with
	// WithAdaptiveParallelism).
	parallelismSet bool
	errs           []error
}

func defaultSettings() settings {
	return settings{parallelism: DefaultParallelism, callbackFrequency: DefaultCallbackFrequency, maxWait: DefaultMaxWait, maxAttempts: 1, backoff: DefaultBackoff,
		protect: terms.Protection{BudgetShare: guard.DefaultBudgetShare, OverloadThreshold: DefaultOverloadThreshold}}
}

// batchSettings are the batch options.
type batchSettings struct {
	on     bool // BatchParDo
	size   int  // 0: DefaultBatchSize
	wait   time.Duration
	perKey bool
	given  []string // batch options given, for the error under ParDo
}

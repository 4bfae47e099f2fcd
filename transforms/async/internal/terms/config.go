package terms

// The transform's configuration: what ParDo decided at pipeline
// construction, shipped to every worker inside the DoFn as JSON.

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// Config is the part of every DoFn of the transform that Beam serializes:
// exported fields only, set once at construction and never changed by a
// worker (see worker.Core for what lives per instance, per process and per bundle).
type Config struct {
	// ID names the transform's shared Pool in each worker process.
	ID string
	// Name is the transform's scope, the namespace of its metrics.
	Name string
	// TimerSuffix ends the names of the transform's timer families
	// (timerfamily.go).
	TimerSuffix string
	User        wrapped.Spec
	KeyType     beam.EncodedType
	ValueType   beam.EncodedType
	IDFn        *wrapped.Shipped
	// Parallelism, Buffer and Held are the pool's bounds: calls running,
	// elements in flight, and elements in flight or awaiting their commit.
	Parallelism, Buffer, Held int
	CallbackFrequency         time.Duration
	MaxWait                   time.Duration
	CallTimeout               time.Duration
	MaxAttempts               int
	Backoff                   Backoff
	RetryIf                   *wrapped.Shipped
	Fallbacks                 []string
	// HasFailures is set by ParDoWithFailures: an element that fails for good
	// goes to the failure output instead of failing its key's commit.
	HasFailures bool
	// Ordered commits each key's results in acceptance order (WithOrdered).
	Ordered    bool
	PriorityFn *wrapped.Shipped
	// Listeners are WithListener's, in the order given.
	Listeners []*ListenerSpec
	// Protect is what protects the called service (protect.go).
	Protect Protection
	// Cache is WithCache's, or nil.
	Cache *CacheSpec
	// Batch is BatchParDo's batching, or nil.
	Batch *BatchSpec
	// RetryInWorker makes failed attempts wait out their backoff in the
	// pool, counted in memory, instead of in bag state: set for the DoFns of
	// bounded input, whose bundles have no later callback to write a retry
	// back to (see retry.go).
	RetryInWorker bool
	// Carried is set when the input is not in the global window: each
	// element then arrives with its window (a windowed value), and each
	// output leaves as a windowed value encoded with OutputType's coder, to
	// be put back in its element's window (windows.go).
	Carried    bool
	OutputType *beam.EncodedType
	// Drain makes the unbounded path escrow every accepted element with a
	// second DoFn that runs, at the end of input, whatever the runner left
	// uncommitted (internal/drain): WithEndOfInputDrain.
	Drain bool
	// DrainDeclined: WithoutEndOfInputDrain was given, so a job server
	// that is Flink takes the job without the drain (jobedit.go).
	DrainDeclined bool
}

// cadence holds every duration derived from the callback frequency.
func (c *Config) Cadence() timers.Cadence { return timers.NewCadence(c.CallbackFrequency) }

// staleAfter is how long a key may go without a callback on this worker
// before the worker drops its work (see worker.Core.EvictIdle).
func (c *Config) StaleAfter() time.Duration { return c.Cadence().StaleAfter }

// PoolConfig is the shared pool's configuration, batching as batch says: it remembers a key
// without tasks for the cadence's Forget period, and spares the work of a
// key that came back after an eviction for twice as long as it was away,
// at most until the cadence takes it for moved.
func (c *Config) PoolConfig(now func() time.Time, batch *state.BatchConfig) state.Config {
	return state.Config{Parallelism: c.Parallelism, Buffer: c.Buffer, Hold: c.Held, Now: now,
		Forget: c.Cadence().Forget, Gone: c.Cadence().Gone, Batch: batch}
}

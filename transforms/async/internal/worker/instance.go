package worker

// What the paths, and tests, read and set of a DoFn instance's runtime:
// the fields stay unexported (see instance), and these are their
// accessors.

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// Clock is the instance's clock: timers.System after Setup, unless a test
// set another.
func (f *Core) Clock() timers.Clock { return f.clock }

// SetClock makes the instance read time from c (tests: a manual clock).
func (f *Core) SetClock(c timers.Clock) { f.clock = c }

// Metrics is the transform's metrics, built in Setup.
func (f *Core) Metrics() *terms.Metrics { return f.metrics }

// Registry is the registry that holds the transform's per-process objects:
// state.Default unless SetRegistry gave another.
func (f *Core) Registry() *state.Registry {
	if f.registry == nil {
		return state.Default
	}
	return f.registry
}

// SetRegistry makes the instance keep its per-process objects in r (tests
// model other workers so).
func (f *Core) SetRegistry(r *state.Registry) { f.registry = r }

// Tickets is the instance's open bundle as the publishing ledgers know it.
func (f *Core) Tickets() *BundleTickets { return f.tickets }

// SetTickets replaces the instance's tickets (tests).
func (f *Core) SetTickets(t *BundleTickets) { f.tickets = t }

// WaitPeriod is how long the bounded path waits between looks at its
// bundle's results, when a test set one; zero otherwise.
func (f *Core) WaitPeriod() time.Duration { return f.waitPeriod }

// SetWaitPeriod sets WaitPeriod (tests).
func (f *Core) SetWaitPeriod(d time.Duration) { f.waitPeriod = d }

// PrepareCoders builds the coders of keys, values and, when the input
// carries windows, outputs, from the config. Setup calls it.
func (f *Core) PrepareCoders() {
	f.keyEnc = beam.NewElementEncoder(f.KeyType.T)
	f.keyDec = beam.NewElementDecoder(f.KeyType.T)
	f.valEnc = beam.NewElementEncoder(f.ValueType.T)
	f.valDec = beam.NewElementDecoder(f.ValueType.T)
	if f.Carried {
		f.outEnc = beam.NewElementEncoder(f.OutputType.T)
	}
}

// EncodeKey encodes key with the input's key coder.
func (f *Core) EncodeKey(key any) ([]byte, error) { return wrapped.Encode(f.keyEnc, key) }

// EncodeValue encodes value with the input's value coder.
func (f *Core) EncodeValue(value any) ([]byte, error) { return wrapped.Encode(f.valEnc, value) }

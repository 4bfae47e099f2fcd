package worker

// A DoFn instance's lifecycle (Setup, Teardown) and what the paths, and
// tests, read and set of its runtime: the fields stay unexported (see
// instance), and these are their accessors.

import (
	"context"
	"sync/atomic"
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

// Setup makes sure the listeners (if any) can be built in this process,
// reaches Redis if the cache requires it (Cache.RedisRequired), rebuilds the
// wrapped fn, forwards its Setup, and prepares coders. What fails before
// the wrapped fn's Setup leaves it unstarted, since it would want its
// Teardown.
func (f *Core) Setup(ctx context.Context) error {
	if f.clock == nil {
		f.clock = timers.System{}
	}
	f.last = &atomic.Pointer[worker]{}
	if _, err := f.worker().hubOf(f); err != nil {
		return err // the listeners cannot be built in this process
	}
	if err := f.requireRedis(ctx); err != nil {
		return err
	}
	u, err := wrapped.Start(ctx, f.User)
	if err != nil {
		return err
	}
	f.user = u
	f.metrics = terms.NewMetrics(f.Name)
	f.tickets = NewBundleTickets(f)
	f.PrepareCoders()
	return nil
}

// Pool returns this transform's Pool in this process. It is looked up on
// every use rather than kept, so that a registry Reset (a simulated worker
// restart) is seen at once.
func (f *Core) Pool() (*state.Pool, error) {
	cfg := f.PoolConfig(f.clock.Now, batchConfig(&f.Config))
	cfg.Gate = gateOf(f.Config, f.clock, f.registry)
	return f.Registry().Shared(f.ID, cfg)
}

// gateOf builds the pool's gate from a core that shares nothing with a DoFn
// instance: the pool lives as long as the process, and a gate that held the
// instance would keep it from being collected (and its bundle tickets from
// being released: publish.go).
func gateOf(c terms.Config, clock timers.Clock, reg *state.Registry) func() state.Gate {
	return func() state.Gate {
		g := &Core{Config: c, instance: instance{clock: clock, registry: reg}}
		return g.newGate()
	}
}

// Teardown forwards Teardown to the wrapped fn once its running calls end.
func (f *Core) Teardown(ctx context.Context) error {
	if f.user == nil {
		return nil
	}
	return f.user.Close(ctx)
}

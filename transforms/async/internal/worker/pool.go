package worker

// The transform's pool in this process, with its batching and its gate.

import (
	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

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
// being released: tickets.go).
func gateOf(c terms.Config, clock timers.Clock, reg *state.Registry) func() state.Gate {
	return func() state.Gate {
		g := &Core{Config: c, instance: instance{clock: clock, registry: reg}}
		return g.newGate()
	}
}

package worker

// The pool's gate on a worker: the guard built from the transform's
// protection, how it reads an attempt's end, and the wait an overload
// answer asks for. Its counts are published in publish.go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/guard"
	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// Guarded is the pool's gate: the transform's guard, and what of its counts
// the transform has published as Beam metrics.
type Guarded struct {
	*guard.Guard
	published *ledger.Ledger // of statsVector
	// mu orders publications, so that the limit gauge ends at the last.
	mu             sync.Mutex
	limitPublished bool
	warned         bool // ParallelismWarning logged
}

// ParallelismWarning is what to tell a user whose fixed parallelism p is
// far above what the service accepts (s), or "" if nothing.
func ParallelismWarning(name string, p int, adaptive bool, s guard.Stats) string {
	accepted := max(1, s.AcceptedAtOnce)
	if adaptive || s.RefusedShare <= terms.WarnRefusedShare || s.AcceptedAtOnce <= 0 || float64(p) < terms.WarnFactor*accepted || s.AtServiceWhenRefused < terms.WarnCrowd*accepted {
		return ""
	}
	if name == "" {
		name = "a transform"
	}
	atOnce := int(math.Ceil(s.AcceptedAtOnce))
	return fmt.Sprintf("async: %s runs up to %d calls at once (WithParallelism), but the service accepted about %d at once over the last %v and refused %.0f%% of its answers for load: "+
		"the throttle keeps it safe, at the cost of waits and retries. Set WithParallelism near %d, or WithAdaptiveParallelism(1, %d) to follow what it accepts",
		name, p, atOnce, guard.AnswerWindow, 100*s.RefusedShare, atOnce, p)
}

// statsVector is s as the ledger counts it.
func statsVector(s guard.Stats) []int64 {
	return []int64{s.Calls, s.Overloaded, s.Throttled, s.ThrottledTime.Milliseconds(), s.BudgetWaits, s.SharedErrors}
}

// newGate builds the guard of this transform in this worker process.
func (f *Core) newGate() state.Gate {
	p := f.Protect
	// The worker's clock (a simulated one in the fault simulator), so that
	// the policies' windows pass with the rest of the transform's time.
	now := f.clock.Now
	cfg := guard.Config{
		Throttle: guard.NewThrottle(p.ThrottleK()),
		Budget:   guard.NewBudget(p.BudgetShare, guard.DefaultBudgetFloor, now()),
		Classify: Classify,
		Now:      now,
	}
	if c, ok := f.clock.(interface {
		Sleep(context.Context, time.Duration) error
	}); ok {
		cfg.Sleep = c.Sleep // the simulator's clock: its throttle waits pass with it
	}
	var rates []guard.Rate
	if p.RatePerSecond > 0 {
		rates = append(rates, guard.LocalRate(p.RatePerSecond, p.RateBurst))
	}
	if p.Shared != nil {
		if r, err := guard.NewSharedRate(*p.Shared); err != nil {
			// Validated at construction; only a hand-made config gets here.
			slog.Error("async: the shared rate limit is off", "transform", f.Name, "err", err)
		} else {
			rates = append(rates, r)
		}
	}
	switch len(rates) {
	case 1:
		cfg.Rate = rates[0]
	case 2:
		cfg.Rate = bothRates(rates)
	}
	if p.AdaptiveMax > 0 {
		cfg.Adaptive = guard.NewAdaptive(p.AdaptiveMin, p.AdaptiveMax, now())
		name, hubOf, clock := f.Name, f.Events, f.clock
		cfg.OnLimit = func(from, to int) {
			if h := hubOf(); h != nil {
				h.deliver(terms.Event{Type: terms.EventLimitChanged, Transform: name, Limit: to, Time: clock.Now(),
					Details: fmt.Sprintf("concurrency limit %d -> %d", from, to)})
			}
		}
	}
	return &Guarded{Guard: guard.New(cfg), published: ledger.New(len(statsVector(guard.Stats{})))}
}

// Classify tells the guard how an attempt ended.
// A fn's own deadline (context.DeadlineExceeded) is a timeout too, as
// WithCallTimeout's is.
func Classify(err error) guard.Outcome {
	if err == nil {
		return guard.Succeeded
	}
	switch terms.KindOf(err) {
	case terms.KindOverloaded:
		return guard.Overload
	case terms.KindTimeout:
		return guard.TimedOut
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return guard.TimedOut
	}
	return guard.Failed
}

// bothRates waits for each rate in turn: a local and a shared limit.
type bothRates []guard.Rate

func (b bothRates) Wait(ctx context.Context) error {
	for _, r := range b {
		if err := r.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (b bothRates) Close() error {
	var errs []error
	for _, r := range b {
		if c, ok := r.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// PreviousError is the error a retry started from bag state shows the
// gate: what matters to it is whether the last attempt was overloaded.
func PreviousError(env state.Envelope) error {
	switch {
	case env.Attempts == 0:
		return nil
	case env.LastKind == terms.KindOverloaded:
		return guard.Overloaded(errors.New(env.LastError), 0)
	}
	return errors.New(env.LastError)
}

// maxRetryAfter caps the wait an overload answer may ask for: a service
// that asks for a day would park the element (and its place) that long.
const maxRetryAfter = 5 * time.Minute

// OverloadWait is the wait an overload answer asked for (at most
// maxRetryAfter), or zero.
func OverloadWait(err error) time.Duration {
	_, d := guard.IsOverloaded(err)
	return min(d, maxRetryAfter)
}

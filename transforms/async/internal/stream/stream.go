package stream

// The DoFn's callbacks. Each is one turn of its key (turn.go). The DoFn
// runs in the global window, each element with its own window (the front's
// windows.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// StartBundle forgets the last bundle's view of its keys; its
// ProcessElement may wait for room up to WithMaxWait.
func (f *Path) StartBundle() {
	f.views = views{wait: f.MaxWait, began: f.Clock().Now()}
	f.Tickets().Begin()
}

// FinishBundle tells the pool's pace (timers.Pace) which of the bundle's
// keys had a timer that fell due while the bundle held them: the runner
// could not fire it, and the planner must set later timers further out.
// The counts the bundle published become final (internal/worker/tickets.go).
func (f *Path) FinishBundle() error {
	if len(f.views.byOwner) == 0 {
		f.Tickets().Finish()
		return nil
	}
	pool, err := f.Pool()
	if err != nil {
		f.Tickets().Release()
		return err
	}
	f.Tickets().Finish()
	var inForce []timers.Plan
	for _, v := range f.views.byOwner {
		if v.planned {
			inForce = append(inForce, v.plan)
		}
	}
	pool.Pace().BundleEnded(f.views.began, f.Clock().Now(), inForce, f.Cadence().GuardCap/2)
	return nil
}

// ProcessElement takes one element of a key: the key's lifecycle steps
// (turn.go), with its element accepted after the bundle's first commit of
// the key.
func (f *Path) ProcessElement(ctx context.Context, ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, key, value any, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure), escrow EscrowEmit) error {
	k, err := f.open(ctx, sp, key, true, emit, fail, escrow)
	if err != nil {
		return err
	}
	el, err := f.Prepare(key, value, k.v.kb, ts)
	if err != nil {
		return err
	}
	// With WithIDFn, an element whose ID was pending when the bundle began is
	// one element with it, even if commitOnce commits that one now.
	isCopy := f.IDFn != nil && k.v.byID[el.ID.Base()] != nil
	if err := k.commitOnce(false); err != nil {
		return err
	}
	if err := k.accept(el, isCopy); err != nil {
		return err
	}
	if err := k.store(); err != nil {
		return err
	}
	k.plan(tp, true)
	f.sweepUnbuffered(ctx, k.pool)
	return nil
}

// OnTimer commits the key: the key's lifecycle steps (turn.go) without an
// element.
func (f *Path) OnTimer(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key any, timer beamtimers.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure), escrow EscrowEmit) error {
	if timer.Family != f.commit.Family {
		return fmt.Errorf("async: timer of unknown family %q", timer.Family)
	}
	k, err := f.open(ctx, sp, key, false, emit, fail, escrow)
	if err != nil {
		return err
	}
	k.fired()
	f.sweepUnbuffered(ctx, k.pool)
	if err := k.commitOnce(true); err != nil {
		return err
	}
	if err := k.store(); err != nil {
		return err
	}
	k.plan(tp, false)
	return nil
}

// sweepUnbuffered drops, at most once a minute, the tasks that hold no place
// (an ordered key's earliest element, started without one) of keys that had
// no callback on this worker for ten stale periods: keys that moved to
// another worker. Eviction for room never reaches them, since removing them
// frees no place; the long wait keeps a key whose callbacks come late from
// losing its result to the sweep and calling again.
func (f *Path) sweepUnbuffered(ctx context.Context, pool *state.Pool) {
	now := f.Clock().Now()
	if !f.Ordered || now.Sub(f.lastSweep) < time.Minute {
		return
	}
	f.lastSweep = now
	f.ReportEvicted(ctx, pool.EvictIdleUnbuffered(now.Add(-f.Cadence().Gone)))
}

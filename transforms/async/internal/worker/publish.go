package worker

// Publishing what happens off the bundle's goroutines (events counted on
// the pool's goroutines, the guard's, the cache's and the batches' counts,
// listener panics) as Beam metrics of the bundles that commit them. Each
// source is a per-process object with a ledger (transforms/internal/ledger):
// a bundle takes the counts no other bundle holds, and they become final
// when its FinishBundle returns without error; a bundle that fails, or
// whose DoFn instance is dropped unfinished, gives them back to a later
// bundle. A count is lost only when the runner fails a bundle after its
// FinishBundle returned (another fused step failing later); the batch_size
// distribution's samples are lost with a failed bundle.

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// BundleTickets is a DoFn instance's open bundle, as the ledgers know it:
// its ticket and the ledgers it took counts from.
type BundleTickets struct {
	mu      sync.Mutex // a cleanup releases from another goroutine
	open    ledger.Ticket
	touched []*ledger.Ledger
}

// NewBundleTickets returns owner's tickets, released when owner (a DoFn
// instance, which Beam Go drops after a failed bundle) is collected with a
// bundle open.
func NewBundleTickets[T any](owner *T) *BundleTickets {
	b := &BundleTickets{}
	runtime.AddCleanup(owner, (*BundleTickets).Release, b)
	return b
}

// Begin opens a bundle, releasing one left open (an instance reused after
// a failed bundle, which Beam Go does not do).
func (b *BundleTickets) Begin() {
	if b == nil {
		return
	}
	b.Release()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open = ledger.NewTicket()
}

// Take takes for the open bundle what l holds of total that no bundle has
// (every count now, at once final, outside a bundle).
func (b *BundleTickets) Take(l *ledger.Ledger, total []int64) ([]int64, bool) {
	if b == nil {
		return l.Take(0, total)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == 0 {
		return l.Take(0, total)
	}
	delta, any := l.Take(b.open, total)
	if any && !containsLedger(b.touched, l) {
		b.touched = append(b.touched, l)
	}
	return delta, any
}

// Finish makes the open bundle's counts final: its FinishBundle returned
// without error.
func (b *BundleTickets) Finish() { b.end((*ledger.Ledger).Confirm) }

// Release gives the open bundle's counts back: it failed.
func (b *BundleTickets) Release() { b.end((*ledger.Ledger).Release) }

func (b *BundleTickets) end(how func(*ledger.Ledger, ledger.Ticket)) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.touched {
		how(l, b.open)
	}
	b.open, b.touched = 0, nil
}

func containsLedger(ls []*ledger.Ledger, l *ledger.Ledger) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

// eventCounts counts a transform's events that happen on the pool's
// goroutines, where Beam metrics cannot be updated (an attempt begins,
// succeeds, is retried, reports progress), in one worker process, with or
// without a listener; and the work a failed bundle dropped, whose own
// counter updates the runner discards. The retries decided by callbacks on
// unbounded input are counted here too, so that one count means one thing
// on both paths.
type eventCounts struct {
	mu     sync.Mutex
	total  eventTally
	ledger *ledger.Ledger
}

// eventTally is one count per event type that eventCounts counts.
type eventTally struct{ started, succeeded, retried, rescheduled, progress, abandoned int64 }

func (t eventTally) vector() []int64 {
	return []int64{t.started, t.succeeded, t.retried, t.rescheduled, t.progress, t.abandoned}
}

// countEvent counts one event of type typ, if eventCounts counts its type
// (see Event, which calls it for every event).
func (f *Core) countEvent(typ terms.EventType) {
	switch typ {
	case terms.EventStarted, terms.EventSucceeded, terms.EventRetrying, terms.EventRescheduled, terms.EventProgress:
	default:
		return // counted where it is sent, with its bundle
	}
	c := f.eventCounts()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch typ {
	case terms.EventStarted:
		c.total.started++
	case terms.EventSucceeded:
		c.total.succeeded++
	case terms.EventRetrying:
		c.total.retried++
	case terms.EventRescheduled:
		c.total.rescheduled++
	case terms.EventProgress:
		c.total.progress++
	}
}

// CountAbandoned counts a task that a failing bundle dropped (cancelled),
// for a later bundle to publish.
func (f *Core) CountAbandoned() {
	c := f.eventCounts()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total.abandoned++
}

// eventCounts returns this transform's event counts in this process, as
// the instance last found them (countEvent runs for every event, on the
// pool's goroutines), or from the registry.
func (f *Core) eventCounts() *eventCounts {
	if f.last != nil {
		if w := f.last.Load(); w != nil {
			return w.counts
		}
	}
	return f.worker().counts
}

// publishEvents publishes the events counted off the bundle's goroutines.
// It looks the counts up in the registry, which keeps them there while the
// transform publishes, and points the instance at them should they have
// been dropped and made anew meanwhile (see worker).
func (f *Core) publishEvents(ctx context.Context) {
	c := f.worker().counts
	c.mu.Lock()
	total := c.total.vector()
	c.mu.Unlock()
	d, any := f.tickets.Take(c.ledger, total)
	if !any {
		return
	}
	m := f.metrics
	for i, counter := range []interface {
		Inc(context.Context, int64)
	}{m.Started, m.Succeeded, m.Retried, m.Rescheduled, m.ProgressReports, m.Cancelled} {
		counter.Inc(ctx, d[i])
	}
}

// Publish adds what happened off the bundle's goroutines since the last
// callback to the Beam metrics, with a bundle's context.
func (f *Core) Publish(ctx context.Context, pool *state.Pool) {
	f.publishSharedSometimes(ctx, pool)
	if len(f.Listeners) == 0 {
		return
	}
	if h := f.Events(); h != nil {
		if d, any := f.tickets.Take(h.Published, []int64{h.Panics.Load()}); any {
			f.metrics.ListenerPanics.Inc(ctx, d[0])
		}
	}
}

// publishSharedSometimes publishes the counts kept by the transform's
// per-process objects (the event counts, the guard, the result cache, the
// batch counts) at most ten times a second per instance, since publish
// runs for every element and each looks its object up; and whenever no
// call is unfinished, so that the last counts of a pipeline are published
// by its last callback (each does nothing when no count changed).
func (f *Core) publishSharedSometimes(ctx context.Context, pool *state.Pool) {
	now := f.clock.Now()
	if now.Sub(f.lastGuardPublish) < 100*time.Millisecond && pool.Unfinished() > 0 {
		return
	}
	f.lastGuardPublish = now
	f.publishEvents(ctx)
	f.publishGuard(ctx, pool)
	if f.Cache != nil {
		f.publishCache(ctx)
	}
	if f.Batch != nil {
		f.publishBatches(ctx)
	}
}

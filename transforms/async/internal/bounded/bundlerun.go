package bounded

// Path, and one bundle of bounded input on one DoFn instance (bundleRun):
// its elements, which of them finished, and the order in which they are
// decided.

import (
	"context"
	"sync"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// Path runs the callbacks of a DoFn of bounded input (bundleFn,
// keyedBundleFn), and the bundles of the end-of-input drain (escrowFn).
//
// On bounded input a runner commits a bundle's outputs with the
// consumption of its input, and retries a failed bundle as a whole, so an element whose call finishes
// inside its bundle needs no bag entry: ProcessElement starts it on the
// shared pool and emits every result of the bundle that has finished since
// (each with its own element's timestamp and window), and FinishBundle
// waits for the rest. When WithMaxItemsHeld elements are held,
// ProcessElement waits for a place, emitting this bundle's results as they
// finish; that bounds the memory whatever the size of the bundle.
//
// A bundle that fails is never resumed: Beam Go drops the DoFn instance of a
// failed bundle and never calls its Teardown. So the bundle releases its
// work itself when it fails: when one of its methods returns an error, and
// when an emit panics (that is how a failure of a later step in the same
// fused stage reaches it). A bundle that fails without a sign to it (an
// earlier step of its stage failed) leaves its work to eviction for room.
type Path struct {
	*worker.Core
	run *bundleRun
}

// New runs the callbacks of a DoFn with core c (bundleFn's, keyedBundleFn's
// or escrowFn's). It sets c.RetryInWorker: a bundle has no later callback
// to write a retry back to, so retries wait in the worker.
func New(c *worker.Core) *Path {
	c.RetryInWorker = true
	return &Path{Core: c}
}

// abandon drops the tasks of a bundle that failed.
func (r *bundleRun) abandon(ctx context.Context, f *Path) {
	for _, t := range r.pool.ForOwner(r.id) {
		r.pool.Remove(t)
		f.CountAbandoned() // this bundle's own counts are dropped with it
		f.Event(terms.EventCancelled, f.DecodeKey(t.Key.Element.Key), t.Key.Element.ID, t.Attempts(), nil)
	}
}

// bundleRun is one bundle of bounded input on one DoFn instance: the
// elements it accepted and has not decided yet (emitted, or failed for
// good), and those of them whose calls have finished. The pool's
// goroutines report finished tasks; the bundle's goroutine emits them.
type bundleRun struct {
	id         string // the pool owner of the bundle's tasks
	pool       *state.Pool
	signal     chan struct{} // one token: a task of the bundle finished
	waitPeriod time.Duration

	mu    sync.Mutex
	items map[state.ElementID]*bundleItem // undecided, by element: finds copies
	done  []*bundleItem                   // finished, not yet emitted
	redo  []*bundleItem                   // interrupted: to be started again
	wake  context.CancelFunc              // ends the current wait for a place
	// queues holds each key's undecided elements in acceptance order
	// (WithOrdered only).
	queues map[string][]*bundleItem
	// endOfInput: the bundle runs an end-of-input drain (package drain),
	// whose elements may take the places of the stream's calls (reclaim).
	// Set and read on the bundle's goroutine.
	endOfInput bool
}

// bundleItem is one element of a bundle.
type bundleItem struct {
	el        worker.Element
	task      *state.Task
	decided   bool        // it succeeded or failed for good
	succeeded bool        // its call succeeded; with WithOrdered it may wait its turn
	copyOf    *bundleItem // set for a copy (WithIDFn) that is one element with a pending one
}

// accept records a new element of the bundle and returns it. Two input
// records with equal values are two elements: an element whose value's ID
// is pending in the bundle takes the next free occurrence ID. With WithIDFn
// (byUser) equal IDs are the same element: the copy is returned with copyOf
// set, and nothing recorded.
func (r *bundleRun) accept(el worker.Element, byUser, ordered bool) *bundleItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	if first := r.items[el.ID]; first != nil {
		if byUser {
			return &bundleItem{el: el, copyOf: first}
		}
		base := el.ID
		for n := int64(2); r.items[el.ID] != nil; n++ {
			el.ID = base.Occurrence(n)
		}
	}
	it := &bundleItem{el: el}
	r.items[el.ID] = it
	if ordered {
		if r.queues == nil {
			r.queues = map[string][]*bundleItem{}
		}
		kb := it.el.ID.Key
		r.queues[kb] = append(r.queues[kb], it)
	}
	return it
}

// holdsPlaces reports whether something of the bundle holds a place that
// will free: a call of its own, or a finished result not yet emitted.
func (r *bundleRun) holdsPlaces() bool {
	r.mu.Lock()
	done := len(r.done) > 0
	r.mu.Unlock()
	return done || len(r.pool.ForOwner(r.id)) > 0
}

func (r *bundleRun) undecided() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items)
}

// waitPeriod bounds one wait for a place (see start), unless the
// instance's WaitPeriod is set (tests shorten it).
const waitPeriod = time.Second

// waitContext returns a context for a wait for a place that ends when a
// task of this bundle finishes (its result can then be emitted, freeing a
// place), after waitPeriod, or when ctx ends.
func (r *bundleRun) waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithTimeout(ctx, r.waitPeriod)
	r.mu.Lock()
	if len(r.done) > 0 {
		cancel() // a result is already waiting to be emitted
	}
	r.wake = cancel
	r.mu.Unlock()
	return wctx, func() {
		r.mu.Lock()
		r.wake = nil
		r.mu.Unlock()
		cancel()
	}
}

// finished is called on the pool goroutine that finishes it's task.
func (r *bundleRun) finished(it *bundleItem) {
	r.mu.Lock()
	r.done = append(r.done, it)
	if r.wake != nil {
		r.wake()
	}
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// interrupted records that it's task was evicted: it is started again,
// rescheduled.
func (r *bundleRun) interrupted(it *bundleItem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	it.task = nil
	it.el.Verdict = &worker.RetryVerdict{} // the next task's policy decides afresh
	it.el.Rescheduled = true
	r.redo = append(r.redo, it)
}

// takeInterruptedHeads removes and returns the elements to start again that
// are the earliest undecided of their key (WithOrdered).
func (r *bundleRun) takeInterruptedHeads() []*bundleItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	var heads []*bundleItem
	rest := r.redo[:0]
	for _, it := range r.redo {
		if q := r.queues[it.el.ID.Key]; len(q) > 0 && q[0] == it {
			heads = append(heads, it)
		} else {
			rest = append(rest, it)
		}
	}
	r.redo = rest
	return heads
}

// takeInterrupted returns an element to start again, or nil.
func (r *bundleRun) takeInterrupted() *bundleItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.redo) == 0 {
		return nil
	}
	it := r.redo[0]
	r.redo = r.redo[1:]
	return it
}

func (r *bundleRun) takeFinished() []*bundleItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	done := r.done
	r.done = nil
	return done
}

// decide records that its call succeeded or failed for good, and returns
// the elements that may now be emitted: it (if it succeeded) without
// WithOrdered; with it, the successful elements at the head of its key's
// queue, up to the first undecided one.
func (r *bundleRun) decide(it *bundleItem, succeeded bool) []*bundleItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	it.decided, it.succeeded = true, succeeded
	if !succeeded {
		r.forget(it) // its ID may serve a later record of the same value at once
	}
	if r.queues == nil {
		if !succeeded {
			return nil
		}
		r.forget(it)
		return []*bundleItem{it}
	}
	return r.popDecided(it.el.ID.Key)
}

// forget removes a decided element from the undecided ones (another item
// may hold its task ID by now: it is left alone); r.mu is held.
func (r *bundleRun) forget(it *bundleItem) {
	if r.items[it.el.ID] == it {
		delete(r.items, it.el.ID)
	}
}

// popDecided removes the decided head of a key's queue and returns the
// successful elements among it; r.mu is held. An element is decided once
// it succeeded or failed for good.
func (r *bundleRun) popDecided(kb string) []*bundleItem {
	q := r.queues[kb]
	var ready []*bundleItem
	for len(q) > 0 && q[0].decided {
		if head := q[0]; head.succeeded {
			ready = append(ready, head)
			r.forget(head)
		}
		q = q[1:]
	}
	if len(q) == 0 {
		delete(r.queues, kb)
	} else {
		r.queues[kb] = q
	}
	return ready
}

// BundleID is the pool owner of the tasks of the bundle in progress ("":
// none).
func (f *Path) BundleID() string {
	if f.run == nil {
		return ""
	}
	return f.run.id
}

// Undecided counts the elements of the bundle in progress that are neither
// emitted nor failed for good.
func (f *Path) Undecided() int {
	if f.run == nil {
		return 0
	}
	return f.run.undecided()
}

// Finished counts the calls of the bundle in progress that finished and
// wait for the bundle's next flush.
func (f *Path) Finished() int {
	if f.run == nil {
		return 0
	}
	f.run.mu.Lock()
	defer f.run.mu.Unlock()
	return len(f.run.done)
}

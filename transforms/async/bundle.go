package async

// The DoFn for bounded input in the global window, where the bundle is the
// unit of commit and retry: outputs are emitted by the bundle that accepted
// their elements, and nothing is written to state.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/state"
)

// bundleFn runs bounded input in the global window. On bounded input a
// runner commits a bundle's outputs with the consumption of its input, and
// retries a failed bundle as a whole, so an element whose call finishes
// inside its bundle needs no bag entry: ProcessElement starts it on the
// shared pool and emits every result of the bundle that has finished since
// (each with its own element's timestamp), and FinishBundle waits for the
// rest. When WithMaxItemsHeld elements are held, ProcessElement waits for
// a place, emitting this bundle's results as they finish; that bounds the
// memory whatever the size of the bundle.
//
// It is stateless, so runners neither group its input by key nor shuffle
// it; keyedBundleFn is the variant for WithOrdered.
type bundleFn struct {
	core
	run *bundleRun
}

// keyedBundleFn is bundleFn for WithOrdered: it declares a bag it never
// uses, which makes runners treat it as stateful and hand each key's
// elements, in one sequence, to one bundle at a time (Dataflow groups them by
// key), so the order of a key is the order of one bundle.
type keyedBundleFn struct {
	bundleFn
	// Group is declared, never read or written.
	Group beamstate.Bag[[]byte]
}

// newBundleFn makes the DoFn; a bundle has no later callback to write a
// retry back to, so retries wait in the worker.
func newBundleFn(c core) *bundleFn {
	c.RetryInWorker = true
	return &bundleFn{core: c}
}

func newKeyedBundleFn(c core) *keyedBundleFn {
	return &keyedBundleFn{bundleFn: *newBundleFn(c), Group: beamstate.MakeBagState[[]byte]("asyncGroup")}
}

// ProcessElement of keyedBundleFn is bundleFn's; the state provider is unused.
func (f *keyedBundleFn) ProcessElement(ctx context.Context, ts beam.EventTime, _ beamstate.Provider, key beam.X, value beam.Y, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.ProcessElement(ctx, ts, key, value, emit, fail)
}

// StartBundle begins a bundle. An earlier bundle of this instance that never
// reached FinishBundle failed, and the runner retries its input elsewhere:
// its tasks are dropped at once, so that they free their places.
func (f *bundleFn) StartBundle(ctx context.Context, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure)) error {
	if f.run != nil {
		f.run.abandon(ctx, f)
	}
	pool, err := f.pool()
	if err != nil {
		return err
	}
	f.run = &bundleRun{id: uuid.NewString(), pool: pool, signal: make(chan struct{}, 1), items: map[string]*bundleItem{}}
	return nil
}

// ProcessElement emits what has finished, then starts the element, waiting
// for a place if WithMaxItemsHeld elements are held.
func (f *bundleFn) ProcessElement(ctx context.Context, ts beam.EventTime, key beam.X, value beam.Y, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	run := f.run
	if err := f.flush(ctx, run, emit, fail); err != nil {
		return err
	}
	el, err := f.prepare(key, value, nil, ts)
	if err != nil {
		return err
	}
	if f.FixedWindow > 0 {
		el.window = fixedWindowOf(ts, f.FixedWindow)
	}
	f.metrics.accepted.Inc(ctx, 1)
	f.event(EventAccepted, key, el.id, 0, nil)
	id := el.taskID()
	if run.items[id] != nil { // a copy of a pending element: one call, one output
		f.metrics.deduplicated.Inc(ctx, 1)
		f.event(EventDeduplicated, key, el.id, 0, nil)
		return nil
	}
	it := &bundleItem{el: el}
	run.accept(it, f.Ordered)
	it.el.k = state.TaskKey{Owner: run.id, ID: id}
	for {
		waitCtx, stop := run.waitContext(ctx)
		t, adm, err := f.submit(waitCtx, run.pool, it.el, -1)
		stop()
		if err != nil {
			return err
		}
		if adm == state.Started {
			it.task = t
			t.AfterFinish(func() { run.finished(it) })
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("async: waiting for room for an element of key %v: %w", key, err)
		}
		// Woken by a result of this bundle (emitting it frees a place), or
		// by the wait's period: then submit has looked for the places of
		// bundles gone from this worker (see EvictIdle), and flush shows
		// this bundle alive.
		if err := f.flush(ctx, run, emit, fail); err != nil {
			return err
		}
	}
}

// FinishBundle waits for every element of the bundle and emits the rest.
func (f *bundleFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	run := f.run
	// A wait for a long backoff touches the bundle now and then, so that the
	// pool does not take it for the bundle of a dropped instance.
	alive := time.NewTicker(f.staleAfter() / 4)
	defer alive.Stop()
	for run.unresolved() > 0 {
		select {
		case <-run.signal:
		case <-alive.C:
		case <-ctx.Done():
			return fmt.Errorf("async: bundle interrupted with %d elements unresolved: %w", run.unresolved(), ctx.Err())
		}
		if err := f.flush(ctx, run, emit, fail); err != nil {
			return err
		}
	}
	f.publish(ctx)
	f.run = nil
	return nil
}

// flush emits the results and failures of the run's finished elements, in
// acceptance order per key with WithOrdered, and frees their places.
func (f *bundleFn) flush(ctx context.Context, run *bundleRun, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	run.pool.Touch(run.id, false)
	for _, it := range run.takeFinished() {
		t := it.task
		f.metrics.observeFinished(ctx, t, f.clock.Now())
		_, callErr := t.Result()
		if callErr != nil {
			run.pool.Remove(t)
			fr, err := f.finalFailure(ctx, it.el, t, callErr)
			if err != nil {
				return err
			}
			fail(it.el.ts, fr)
			f.metrics.failed.Inc(ctx, 1)
		}
		// Without WithOrdered a result is emitted at once; with it, when
		// every earlier element of its key is resolved (a failure resolves
		// its element at once). A result waiting for its turn keeps its
		// place until emitted.
		for _, ready := range run.resolve(it, callErr == nil) {
			run.pool.Remove(ready.task)
			f.emitResult(ctx, ready.el, ready.task, emit)
		}
	}
	return nil
}

// emitResult emits one element's outputs, with the element's timestamp.
func (f *core) emitResult(ctx context.Context, el element, t *state.Task, emit func(beam.EventTime, beam.Z)) {
	outputs, _ := t.Result()
	for _, o := range outputs {
		emit(el.ts, o)
	}
	f.metrics.committed.Inc(ctx, 1)
	f.event(EventCommitted, el.key, el.id, el.done+t.Attempts(), nil)
}

// finalFailure turns the final error of an element's task (its local
// retries are over) into its failure record, or into the error that fails
// the bundle when the transform has no failure output. A task cancelled
// before its attempts ran out (a worker reset) fails the bundle, which the
// runner then retries.
func (f *core) finalFailure(ctx context.Context, el element, t *state.Task, callErr error) (Failure, error) {
	if t.Interrupted() {
		return Failure{}, fmt.Errorf("async: element %x of key %v was interrupted before its bundle could finish it: %w", el.id, el.key, callErr)
	}
	env := state.Envelope{ID: el.id, EventTimeMs: int64(el.ts), Value: el.vb, Attempts: el.done}
	out, err := f.settle(el.key, el.kb, env, t, callErr)
	if err != nil {
		return Failure{}, err
	}
	if out.failure == nil {
		return Failure{}, fmt.Errorf("async: element %x of key %v was interrupted before its bundle could finish it: %w", el.id, el.key, callErr)
	}
	return *out.failure, nil
}

// abandon drops the tasks of a bundle that failed before FinishBundle.
func (r *bundleRun) abandon(ctx context.Context, f *bundleFn) {
	for _, t := range r.pool.ForOwner(r.id) {
		r.pool.Remove(t)
		f.metrics.cancelled.Inc(ctx, 1)
	}
}

// bundleRun is one bundle of bounded input on one DoFn instance: the
// elements it accepted and has not resolved yet (emitted, or failed for
// good), and those of them whose calls have finished. The pool's
// goroutines report finished tasks; the bundle's goroutine emits them.
type bundleRun struct {
	id     string // the pool owner of the bundle's tasks
	pool   *state.Pool
	signal chan struct{} // one token: a task of the bundle finished

	mu    sync.Mutex
	items map[string]*bundleItem // unresolved, by task ID: finds copies
	done  []*bundleItem          // finished, not yet emitted
	wake  context.CancelFunc     // ends the current wait for a place
	// queues holds each key's unresolved elements in acceptance order
	// (WithOrdered only).
	queues map[string][]*bundleItem
}

// bundleItem is one element of a bundle.
type bundleItem struct {
	el        element
	task      *state.Task
	succeeded bool // its call succeeded; with WithOrdered it may wait its turn
}

func (r *bundleRun) accept(it *bundleItem, ordered bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items[it.el.taskID()] = it
	if ordered {
		if r.queues == nil {
			r.queues = map[string][]*bundleItem{}
		}
		kb := string(it.el.kb)
		r.queues[kb] = append(r.queues[kb], it)
	}
}

func (r *bundleRun) unresolved() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items)
}

// waitPeriod bounds one wait for a place (see ProcessElement).
const waitPeriod = time.Second

// waitContext returns a context for a wait for a place that ends when a
// task of this bundle finishes (its result can then be emitted, freeing a
// place), after waitPeriod, or when ctx ends.
func (r *bundleRun) waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithTimeout(ctx, waitPeriod)
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

func (r *bundleRun) takeFinished() []*bundleItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	done := r.done
	r.done = nil
	return done
}

// resolve records that its call succeeded or failed for good, and returns
// the elements that may now be emitted: it (if it succeeded) without
// WithOrdered; with it, the successful elements at the head of its key's
// queue, up to the first unresolved one.
func (r *bundleRun) resolve(it *bundleItem, succeeded bool) []*bundleItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	it.succeeded = succeeded
	if !succeeded {
		delete(r.items, it.el.taskID())
	}
	if r.queues == nil {
		if !succeeded {
			return nil
		}
		delete(r.items, it.el.taskID())
		return []*bundleItem{it}
	}
	return r.popResolved(string(it.el.kb))
}

// popResolved removes the resolved head of a key's queue and returns the
// successful elements among it; r.mu is held. An element is resolved once
// it succeeded or failed for good (failures leave r.items at once).
func (r *bundleRun) popResolved(kb string) []*bundleItem {
	q := r.queues[kb]
	var ready []*bundleItem
	for len(q) > 0 {
		head := q[0]
		_, unresolved := r.items[head.el.taskID()]
		if unresolved && !head.succeeded {
			break
		}
		if head.succeeded {
			ready = append(ready, head)
			delete(r.items, head.el.taskID())
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

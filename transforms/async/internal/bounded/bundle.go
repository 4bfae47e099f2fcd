package bounded

// The bounded path, where the bundle is the unit of commit and retry:
// outputs are emitted by the bundle that accepted their elements, and
// nothing is written to state. Its DoFn runs in the global window, each
// element with its own window (the front's windows.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// StartBundle begins a bundle.
func (f *Path) StartBundle(ctx context.Context) error {
	if f.run != nil { // not seen in Beam Go, which drops a failed bundle's instance; kept for other harnesses
		f.run.abandon(ctx, f)
	}
	pool, err := f.Pool()
	if err != nil {
		return err
	}
	wait := waitPeriod
	if f.WaitPeriod() > 0 {
		wait = f.WaitPeriod()
	}
	f.run = &bundleRun{id: uuid.NewString(), pool: pool, signal: make(chan struct{}, 1), items: map[state.ElementID]*bundleItem{}, waitPeriod: wait}
	f.Tickets().Begin()
	return nil
}

// ProcessElement emits what has finished, then starts the element, waiting
// for a place if WithMaxItemsHeld elements are held.
func (f *Path) ProcessElement(ctx context.Context, ts beam.EventTime, key beam.X, value beam.Y, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure)) (err error) {
	run := f.run
	defer f.releaseOnFailure(ctx, run, &err)
	if err := f.flush(ctx, run, emit, fail); err != nil {
		return err
	}
	if err := f.restartInterrupted(ctx, run, emit, fail); err != nil {
		return err
	}
	el, err := f.Prepare(key, value, nil, ts)
	if err != nil {
		return err
	}
	el.Verdict = &worker.RetryVerdict{}
	f.Metrics().Accepted.Inc(ctx, 1)
	it := run.accept(el, f.IDFn != nil, f.Ordered)
	f.Event(terms.EventAccepted, key, it.el.ID.ID, 0, nil)
	if it.copyOf != nil { // WithIDFn: a copy of a pending element is one element with it
		f.Metrics().Deduplicated.Inc(ctx, 1)
		f.Event(terms.EventDeduplicated, key, it.el.ID.ID, 0, nil)
		return nil
	}
	return f.start(ctx, run, it, emit, fail)
}

// start starts one element of the bundle on the pool, waiting for a place
// while emitting what finishes meanwhile.
func (f *Path) start(ctx context.Context, run *bundleRun, it *bundleItem, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure)) error {
	it.el.Owner = run.id
	for {
		if run.endOfInput { // the stream's calls will never be committed
			f.reclaim(ctx, run)
		}
		waitCtx, stop := run.waitContext(ctx)
		t, adm, err := f.Submit(waitCtx, run.pool, it.el, -1)
		stop()
		switch {
		case err != nil:
			return err
		case adm == state.Started:
			it.task = t
			t.AfterFinish(func() { run.finished(it) })
			return nil
		case adm == state.Existing: // task IDs are unique within a bundle
			return fmt.Errorf("async: element %x of key %v already has a task in this bundle", it.el.ID.ID, it.el.Key)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("async: waiting for room for an element of key %v: %w", it.el.Key, err)
		}
		// Woken by a result of this bundle (emitting it frees a place), or
		// by the wait's period: then submit has looked for the places of
		// bundles gone from this worker (see EvictIdle), and flush shows
		// this bundle alive.
		if err := f.flush(ctx, run, emit, fail); err != nil {
			return err
		}
		if f.Ordered { // places held by results waiting for an evicted head free only once it is started again
			if err := f.restartHeads(ctx, run); err != nil {
				return err
			}
		}
	}
}

// restartInterrupted starts again the elements whose tasks were evicted
// while their bundle lives (it showed no sign of life for the stale period:
// a slow step fused before it, say). Their calls are made again; nothing is
// emitted for them until then.
//
// With WithOrdered a key's earliest undecided element starts again without
// a place (see restartHeads); the others wait for one, as new elements do.
func (f *Path) restartInterrupted(ctx context.Context, run *bundleRun, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure)) error {
	if f.Ordered {
		if err := f.restartHeads(ctx, run); err != nil {
			return err
		}
	}
	for {
		it := run.takeInterrupted()
		if it == nil {
			return nil
		}
		if err := f.start(ctx, run, it, emit, fail); err != nil {
			return err
		}
	}
}

// restartHeads starts again, without a place, the evicted elements that
// are the earliest undecided of their key (WithOrdered): the results after
// one keep their places until it is decided, and when they hold every
// place it would never find one. One such task per key of the bundle, as
// on unbounded input.
func (f *Path) restartHeads(ctx context.Context, run *bundleRun) error {
	for _, it := range run.takeInterruptedHeads() {
		t, err := f.StartUnbuffered(ctx, run.pool, it.el)
		if err != nil {
			return err
		}
		it.task = t
		t.AfterFinish(func() { run.finished(it) })
	}
	return nil
}

// releaseOnFailure drops the bundle's work when the method that deferred it
// fails (returns an error, or panics: an emit panics when a later step of
// the stage failed); the runner retries the bundle elsewhere and never
// calls this instance again.
func (f *Path) releaseOnFailure(ctx context.Context, run *bundleRun, err *error) {
	if r := recover(); r != nil {
		run.abandon(ctx, f)
		f.run = nil
		f.Tickets().Release()
		panic(r)
	}
	if *err != nil {
		run.abandon(ctx, f)
		f.run = nil
		f.Tickets().Release() // the runner drops what this bundle published
	}
}

// FinishBundle waits for every element of the bundle and emits the rest.
func (f *Path) FinishBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure)) (err error) {
	run := f.run
	defer f.releaseOnFailure(ctx, run, &err)
	// A wait for a long backoff or call touches the bundle now and then, so
	// that the pool does not take it for the bundle of a dropped instance.
	alive := time.NewTicker(f.StaleAfter() / 4)
	defer alive.Stop()
	for {
		if err := f.restartInterrupted(ctx, run, emit, fail); err != nil {
			return err
		}
		if run.undecided() == 0 {
			break
		}
		select {
		case <-run.signal:
		case <-alive.C:
		case <-ctx.Done():
			return fmt.Errorf("async: bundle interrupted with %d elements undecided: %w", run.undecided(), ctx.Err())
		}
		if err := f.flush(ctx, run, emit, fail); err != nil {
			return err
		}
	}
	f.Publish(ctx, run.pool)
	f.run = nil
	f.Tickets().Finish() // the counts it published are final (internal/worker/tickets.go)
	return nil
}

// flush emits the results and failures of the run's finished elements, in
// acceptance order per key with WithOrdered, and frees their places. An
// element whose task was interrupted (evicted) waits to be started again.
// It also shows the bundle alive to the pool and to the registry, and fails
// the bundle if the worker's pool was reset under it.
func (f *Path) flush(ctx context.Context, run *bundleRun, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure)) error {
	if p, err := f.Pool(); err != nil || p != run.pool {
		return fmt.Errorf("async: the worker's pool of %s was reset while a bundle ran (a restart): the bundle fails and is retried", f.Name)
	}
	run.pool.Touch(run.id, false)
	for _, it := range run.takeFinished() {
		t := it.task
		f.Metrics().ObserveFinished(ctx, t)
		_, callErr := t.Result()
		if t.Interrupted() {
			run.pool.Remove(t)
			it.el.Done += t.CompletedAttempts() // its failed attempts count; one cut short by the interruption does not
			run.interrupted(it)
			continue
		}
		if callErr != nil {
			run.pool.Remove(t)
			fr, err := f.finalFailure(it.el, t, callErr)
			if err != nil {
				return err
			}
			fail(it.el.Timestamp, fr)
			f.Metrics().CountFailed(ctx)
		}
		// Without WithOrdered a result is emitted at once; with it, when
		// every earlier element of its key is decided (a failure decides
		// its element at once). A result waiting for its turn keeps its
		// place until emitted.
		for _, ready := range run.decide(it, callErr == nil) {
			run.pool.Remove(ready.task)
			if err := f.emitResult(ctx, ready.el, ready.task, emit); err != nil {
				return err
			}
		}
	}
	return nil
}

// emitResult emits one element's outputs, with the element's timestamp and
// window.
func (f *Path) emitResult(ctx context.Context, el worker.Element, t *state.Task, emit func(beam.EventTime, beam.Z)) error {
	outputs, _ := t.Result()
	return f.CommitOutputs(ctx, el.Key, el.ID.ID, int64(el.Timestamp), el.ID.Window, outputs, el.Done+t.Attempts(), t.FinishedAt(), emit)
}

// finalFailure turns the final error of an element's task into its failure
// record, or into the error that fails the bundle. An interrupted task never
// comes here (flush starts its element again). When the pool's retry policy
// declined a retry, its verdict stands (el.verdict, with the reason when
// WithRetryIf panicked). An error the policy never saw (a rate gate that
// failed before an attempt, Enrich's join of a cached answer) is decided
// here, once: if a retry is still due, the bundle fails and is retried
// whole, as before any attempt was made; if not, it is the element's
// failure. Without a failure output every final failure fails the bundle.
func (f *Path) finalFailure(el worker.Element, t *state.Task, callErr error) (terms.Failure, error) {
	env := state.Envelope{ID: el.ID.ID, EventTimeMs: int64(el.Timestamp), Value: el.ValueBytes, Attempts: el.Done, Window: el.ID.Window}
	env, kind := f.RecordAttempts(env, t, callErr)
	why := ""
	if v := el.Verdict; v != nil && v.Declined {
		why = v.Why
	} else if retry, w := f.Retryable(kind, env.Attempts, callErr); retry {
		return terms.Failure{}, fmt.Errorf("async: element %x of key %v ended on an error its retry policy did not see, with retries left: the bundle fails and is retried: %w", el.ID.ID, el.Key, callErr)
	} else {
		why = w
	}
	failure, err := f.FailedForGood(el.Key, []byte(el.ID.Key), env, kind, why, callErr)
	if err != nil {
		return terms.Failure{}, err
	}
	return *failure, nil
}

// FlushNow flushes the bundle in progress, as its next ProcessElement would.
func (f *Path) FlushNow(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure)) error {
	return f.flush(ctx, f.run, emit, fail)
}

// Adopt takes into the bundle an element whose call t, of the unbounded
// path, finished with success on this worker (the end-of-input drain,
// package drain), as ProcessElement takes an element but with t as its
// task: its outputs are emitted with the bundle's results (with
// WithOrdered in their turn), and it is neither accepted nor called again.
// attempts counts the element's failed attempts before t.
func (f *Path) Adopt(ctx context.Context, ts beam.EventTime, key, value any, attempts int, t *state.Task) (err error) {
	run := f.run
	defer f.releaseOnFailure(ctx, run, &err)
	el, err := f.Prepare(key, value, nil, ts)
	if err != nil {
		return err
	}
	el.Done, el.Verdict = attempts, &worker.RetryVerdict{}
	it := run.accept(el, f.IDFn != nil, f.Ordered)
	if it.copyOf != nil { // WithIDFn: one element with a pending one, which serves it
		run.pool.Remove(t)
		f.Metrics().Deduplicated.Inc(ctx, 1)
		f.Event(terms.EventDeduplicated, key, it.el.ID.ID, 0, nil)
		return nil
	}
	it.task = t
	run.finished(it)
	return nil
}

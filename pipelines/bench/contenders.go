package main

// The contenders other than async and python: what a Go user writes
// without this project (sync, bundle, eager), the call async.BatchParDo
// wraps in the fewer suite, and the runner's own cost of this pipeline
// shape (passthrough). The stateful ones without calls, timeronly and
// roundtimer, are in contenders_timers.go.

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// syncFn calls one element at a time: a plain ParDo. async wraps it too.
type syncFn struct{ Caller caller }

func (f *syncFn) ProcessElement(ctx context.Context, _ string, v string, emit func(string)) error {
	if err := f.Caller.call(ctx, v); err != nil {
		return err
	}
	emit(v)
	return nil
}

// batchCallFn is what async.BatchParDo wraps in the fewer suite: one
// request for a whole batch, then every element back unchanged.
type batchCallFn struct {
	Caller     caller
	ItemCostUs int64
}

func (f *batchCallFn) ProcessBatch(ctx context.Context, _ []string, values []string, emit func(int, string)) error {
	if err := f.Caller.callBatch(ctx, len(values), time.Duration(f.ItemCostUs)*time.Microsecond); err != nil {
		return err
	}
	for i, v := range values {
		emit(i, v)
	}
	return nil
}

// passthroughFn emits its input at once, with no call: every contender does
// at least this much in this pipeline shape, so its latency and CPU are a
// lower bound for all of them (what the runner costs to move the elements).
type passthroughFn struct{}

func (*passthroughFn) ProcessElement(_ string, v string, emit func(string)) { emit(v) }

// bundleFn runs calls on goroutines inside the bundle, at most P at once, and
// emits everything in FinishBundle: the simplest thing a Go user hand-rolls.
type bundleFn struct {
	Caller caller
	P      int

	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	out  []string
	errs []error
}

func (f *bundleFn) StartBundle(_ context.Context, _ func(string)) {
	f.sem = make(chan struct{}, f.P)
	f.out, f.errs = nil, nil
}

func (f *bundleFn) ProcessElement(ctx context.Context, _ string, v string, _ func(string)) {
	f.sem <- struct{}{}
	f.wg.Add(1)
	go func() { // waited for by FinishBundle (f.wg)
		defer f.wg.Done()
		defer func() { <-f.sem }()
		err := f.Caller.call(context.WithoutCancel(ctx), v)
		f.mu.Lock()
		defer f.mu.Unlock()
		if err != nil {
			f.errs = append(f.errs, err)
			return
		}
		f.out = append(f.out, v)
	}()
}

func (f *bundleFn) FinishBundle(_ context.Context, emit func(string)) error {
	f.wg.Wait()
	for _, v := range f.out {
		emit(v)
	}
	if len(f.errs) > 0 {
		return fmt.Errorf("%d calls failed, first: %w", len(f.errs), f.errs[0])
	}
	return nil
}

// eagerFn is bundleFn as a competent Go user writes it: every
// ProcessElement, before it starts its own call (and while it waits for a
// free slot), and FinishBundle emit every result finished so far, each with
// its own element's timestamp; FinishBundle waits for the rest. Emitting
// happens on the bundle's goroutine only: Beam Go emitters are not safe for
// concurrent use, so call goroutines hand their results over. FinishBundle's
// outputs would carry timestamp 0 (and the global window, as any
// FinishBundle output in Beam Go) if the emitter did not set the timestamp.
type eagerFn struct {
	Caller caller
	P      int

	sem   chan struct{} // a slot per call in flight, at most P
	ready chan struct{} // a call finished (capacity 1: a hint, not a count)
	wg    sync.WaitGroup
	mu    sync.Mutex
	done  []eagerResult
	errs  []error
}

type eagerResult struct {
	ts beam.EventTime
	v  string
}

func (f *eagerFn) StartBundle(_ context.Context, _ func(beam.EventTime, string)) {
	f.sem, f.ready = make(chan struct{}, f.P), make(chan struct{}, 1)
	f.done, f.errs = nil, nil
}

func (f *eagerFn) ProcessElement(ctx context.Context, ts beam.EventTime, _ string, v string, emit func(beam.EventTime, string)) error {
	for {
		if err := f.emitFinished(emit); err != nil {
			return err
		}
		select {
		case f.sem <- struct{}{}:
			f.start(ctx, ts, v)
			return nil
		case <-f.ready: // a result to emit before waiting on
		}
	}
}

func (f *eagerFn) start(ctx context.Context, ts beam.EventTime, v string) {
	f.wg.Add(1)
	go func() { // waited for by FinishBundle (f.wg)
		defer f.wg.Done()
		err := f.Caller.call(context.WithoutCancel(ctx), v)
		f.mu.Lock()
		if err != nil {
			f.errs = append(f.errs, err)
		} else {
			f.done = append(f.done, eagerResult{ts, v})
		}
		f.mu.Unlock()
		<-f.sem
		select {
		case f.ready <- struct{}{}:
		default: // a hint is already pending
		}
	}()
}

// emitFinished emits the results finished so far, on the bundle's
// goroutine, and returns the first call error.
func (f *eagerFn) emitFinished(emit func(beam.EventTime, string)) error {
	f.mu.Lock()
	done, errs := f.done, f.errs
	f.done = nil
	f.mu.Unlock()
	for _, r := range done {
		emit(r.ts, r.v)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d calls failed, first: %w", len(errs), errs[0])
	}
	return nil
}

func (f *eagerFn) FinishBundle(_ context.Context, emit func(beam.EventTime, string)) error {
	f.wg.Wait()
	return f.emitFinished(emit)
}

func init() {
	beam.RegisterType(reflect.TypeOf((*batchCallFn)(nil)).Elem())
	register.DoFn4x1[context.Context, string, string, func(string), error](&syncFn{})
	register.DoFn3x0[string, string, func(string)](&passthroughFn{})
	register.DoFn4x0[context.Context, string, string, func(string)](&bundleFn{})
	register.DoFn5x1[context.Context, beam.EventTime, string, string, func(beam.EventTime, string), error](&eagerFn{})
	register.Emitter1[string]()
	register.Emitter2[beam.EventTime, string]()
}

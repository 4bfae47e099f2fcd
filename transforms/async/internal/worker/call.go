package worker

// What every DoFn of the transform shares at run time: the per-instance
// setup, and one element's way from prepare (encode, identify) through
// submit to the call of the wrapped fn (work).

import (
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"

	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
)

// Core is what every DoFn of the transform shares, in three parts by
// lifetime: the configuration Beam ships to workers (config, as JSON), what
// each DoFn instance rebuilds from it in Setup (instance), and, looked up in
// the worker's registry on use, what lives once per worker process (the
// Pool, the event hub, the guard, the result cache). What lives for one
// bundle or one key's callback is the DoFns' (views, bundleRun, keyTurn).
// The DoFns hold their state and timer fields themselves, because Beam looks
// for them at the top level only.
type Core struct {
	terms.Config
	instance
}

// instance is what one DoFn instance builds in Setup (or a test sets): none
// of it is serialized. Its fields stay unexported: Beam registers a DoFn's
// exported fields, embedded ones included, as schema types (instance.go
// has the accessors).
type instance struct {
	clock    timers.Clock
	metrics  *terms.Metrics
	registry *state.Registry // nil: state.Default; tests model other workers
	user     *wrapped.Fn
	keyEnc   beam.ElementEncoder
	keyDec   beam.ElementDecoder
	valEnc   beam.ElementEncoder
	valDec   beam.ElementDecoder
	outEnc   beam.ElementEncoder // outputs, when the input carries windows
	// lastEvict is when this instance last looked for work to evict; the
	// scan is over the whole pool, so it runs at most once a second.
	lastEvict time.Time
	// lastGuardPublish is when this instance last published the guard's
	// counts (publishSharedSometimes).
	lastGuardPublish time.Time
	// waitPeriod, when set, replaces the bundle path's waitPeriod (tests).
	waitPeriod time.Duration
	// last is the transform's per-process object as this instance last
	// found it (worker.go), set in Setup: events are counted on the hot
	// path, on the pool's goroutines, without a registry lookup.
	last *atomic.Pointer[worker]
	// tickets is this instance's open bundle as the publishing ledgers
	// know it (publish.go); nil: publish as final at once (tests).
	tickets *BundleTickets
}

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

// reg is the registry that holds this transform's per-process objects.
func (f *Core) reg() *state.Registry {
	if f.registry == nil {
		return state.Default
	}
	return f.registry
}

// Pool returns this transform's Pool in this process. It is looked up on
// every use rather than kept, so that a registry Reset (a simulated worker
// restart) is seen at once.
func (f *Core) Pool() (*state.Pool, error) {
	cfg := f.PoolConfig(f.clock.Now, batchConfig(&f.Config))
	cfg.Gate = gateOf(f.Config, f.clock, f.registry)
	return f.reg().Shared(f.ID, cfg)
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

// Prepare encodes one input element (kb: its key, if already encoded),
// takes its window from it when the input carries windows, and computes its
// value's ID (see identify) and its priority. On unbounded input the ID is
// made unique among its key's elements at acceptance (see acceptedID).
func (f *Core) Prepare(key, value any, kb []byte, ts beam.EventTime) (Element, error) {
	if kb == nil {
		var err error
		if kb, err = wrapped.Encode(f.keyEnc, key); err != nil {
			return Element{}, fmt.Errorf("async: encoding key %v: %w", key, err)
		}
	}
	var vb []byte
	var win string
	if f.Carried {
		var ok bool
		if win, vb, ok = Carry.Open(value); !ok {
			return Element{}, fmt.Errorf("async: an element of key %v reached the transform without its window (got %T)", key, value)
		}
		var err error
		if value, err = f.DecodeValue(key, vb); err != nil {
			return Element{}, err
		}
	} else {
		var err error
		if vb, err = wrapped.Encode(f.valEnc, value); err != nil {
			return Element{}, fmt.Errorf("async: encoding value of key %v: %w", key, err)
		}
	}
	id, err := f.Identify(value, vb)
	if err != nil {
		return Element{}, err
	}
	prio, err := f.Priority(value)
	if err != nil {
		return Element{}, err
	}
	return Element{ID: state.ElementID{Key: string(kb), Window: win, ID: id}, Key: key, Value: value, ValueBytes: vb, Timestamp: ts, Priority: prio}, nil
}

// Carry takes apart and makes the values that carry an element's window
// across the global-window DoFns. Their type is the front's (windowed),
// whose name is in the job graph, so the front sets Carry in its init.
var Carry struct {
	Open func(v any) (window string, value []byte, ok bool)
	Wrap func(window string, value []byte) any
}

// Element is one element about to be started.
type Element struct {
	// ID names the element (its key encoded with the input's coder, its
	// window, its ID, and on unbounded input where its key's state accepted
	// it); owner is the pool owner of its task, set when it is accepted.
	ID         state.ElementID
	Owner      string
	Key, Value any
	// ValueBytes is the value encoded with the input's coder, ts the event time.
	ValueBytes []byte
	Timestamp  beam.EventTime
	// Done is how many attempts of the element failed before (from bag
	// state, or in its bundle before an eviction). rescheduled marks an
	// element whose earlier start this worker lost or never had, started
	// again (EventRescheduled): on unbounded input a pending element of bag
	// state with no retry due and no task here (a restart, a moved key, an
	// eviction, a failed callback's work), on bounded input one evicted
	// from its bundle. A due retry (after EventRetrying) and a queued
	// element's first start (after EventAccepted) are not.
	Done        int
	Priority    int
	Rescheduled bool
	// Previous is the error of the element's last attempt before (from
	// bag state), for the pool's gate; nil for a new element.
	Previous error
	// Verdict receives the in-worker retry policy's decision to stop
	// (RetryInWorker; nil otherwise), so that a declined retry is not
	// decided again; an error the policy never saw is decided in
	// finalFailure.
	Verdict *RetryVerdict
}

// Task is the key of the element's task in the pool.
func (el Element) Task() state.TaskKey { return state.TaskKey{Owner: el.Owner, Element: el.ID} }

// emitOutputs emits one element's outputs with its timestamp (Unix ms),
// each wrapped with the element's window when the input carries windows.
func (f *Core) emitOutputs(tsMs int64, win string, outputs []any, emit func(beam.EventTime, beam.Z)) error {
	ts := mtime.Time(tsMs)
	for _, o := range outputs {
		if !f.Carried {
			emit(ts, o)
			continue
		}
		ob, err := wrapped.Encode(f.outEnc, o)
		if err != nil {
			return fmt.Errorf("async: encoding an output of type %v: %w", f.OutputType.T, err)
		}
		emit(ts, Carry.Wrap(win, ob))
	}
	return nil
}

// CommitOutputs emits the outputs of element id of key, which succeeded
// after attempts attempts, the last of which finished at finished, with its
// timestamp (Unix ms) and window, and counts and reports its commit.
func (f *Core) CommitOutputs(ctx context.Context, key any, id string, tsMs int64, win string, outputs []any, attempts int, finished time.Time, emit func(beam.EventTime, beam.Z)) error {
	if err := f.emitOutputs(tsMs, win, outputs, emit); err != nil {
		return err
	}
	f.metrics.CountCommitted(ctx, finished, f.clock.Now())
	f.Event(terms.EventCommitted, key, id, attempts, nil)
	return nil
}

// Submit starts the wrapped fn for one element, taking one of the pool's
// places, if there is room.
func (f *Core) Submit(ctx context.Context, pool *state.Pool, el Element, wait time.Duration) (*state.Task, state.Admission, error) {
	if !f.user.Acquire() {
		return nil, state.NoRoom, fmt.Errorf("async: %s is already torn down", f.user.Name)
	}
	job, k := f.job(el), el.Task()
	t, adm, err := pool.Submit(ctx, k, wait, job)
	if adm == state.NoRoom && err == nil && f.EvictIdle(ctx, pool) && pool.HasRoom(el.Owner) {
		t, adm, err = pool.Submit(ctx, k, 0, job)
	}
	if adm != state.Started {
		f.user.Release()
	} else {
		t.AfterFinish(f.user.Release)
	}
	return t, adm, err
}

// EvictIdle removes, at most once a second, the work of owners that showed
// no sign of life for the stale period, and their waits for room and the
// places kept for them (see state.Pool.EvictIdle); it reports whether it
// ran, and the caller looks for room again. It is called for room only: when
// an element finds no place. A quiet owner's finished results stay as long as
// nobody needs their places, so a key whose callbacks come late still finds
// them (a sweep on a timer would evict them, and a late key would call again
// and again without ever committing).
func (f *Core) EvictIdle(ctx context.Context, pool *state.Pool) bool {
	now := f.clock.Now()
	if now.Sub(f.lastEvict) < time.Second {
		return false
	}
	f.lastEvict = now
	f.ReportEvicted(ctx, pool.EvictIdle(now.Add(-f.StaleAfter())))
	return true
}

// ReportEvicted counts evicted tasks and tells the listener.
func (f *Core) ReportEvicted(ctx context.Context, evicted []*state.Task) {
	f.metrics.Evicted.Inc(ctx, int64(len(evicted)))
	for _, t := range evicted {
		e := t.Key.Element
		f.Event(terms.EventCancelled, f.DecodeKey(e.Key), e.ID, t.Attempts(), nil)
	}
}

// StartUnbuffered starts the wrapped fn for one element without taking a
// place (an ordered key's earliest element).
func (f *Core) StartUnbuffered(_ context.Context, pool *state.Pool, el Element) (*state.Task, error) {
	if !f.user.Acquire() {
		return nil, fmt.Errorf("async: %s is already torn down", f.user.Name)
	}
	t, existing, err := pool.StartUnbuffered(el.Task(), f.job(el))
	if existing || err != nil {
		f.user.Release()
	} else {
		t.AfterFinish(f.user.Release)
	}
	return t, err
}

// job is what the pool runs for one element: its call, with batching, the
// result cache around it, and Enrich's join around that (the cache keeps
// answers).
func (f *Core) job(el Element) state.Job {
	return f.joined(el, f.Cached(el, f.batchJob(el, state.Job{Work: f.work(el), Retry: f.inWorkerRetry(el), Priority: el.Priority, Previous: el.Previous})))
}

// work is one element's call; attempt n of the task is attempt done+n of the
// element. The caller holds the user fn for the task; it is released when the
// task's last attempt returns (see wrapped.Fn.Release).
func (f *Core) work(el Element) state.Work {
	limit, key, id := f.CallTimeout, el.Key, el.ID.ID
	in := wrapped.CallInput{Key: key, Value: el.Value, TS: el.Timestamp, Window: el.ID.Window}
	return func(ctx context.Context, attempt int) ([]any, error) {
		n := el.Done + attempt
		ctx = terms.WithAttempt(ctx, n, f.Fallbacks)
		ctx = context.WithValue(ctx, CallKey{}, CallInfo{F: f, Key: key, ID: id, Attempt: n})
		f.attemptBegins(el, attempt)
		outputs, err := callWithin(ctx, limit, func(ctx context.Context) ([]any, error) { return f.user.Call(ctx, in) })
		if err == nil {
			f.Event(terms.EventSucceeded, key, id, n, nil)
		}
		return outputs, err
	}
}

// attemptBegins tells the listener that attempt (counted within the task)
// of el begins: a rescheduled element reports EventRescheduled as its first
// attempt begins, so that a listener sees it before EventStarted.
func (f *Core) attemptBegins(el Element, attempt int) {
	if el.Rescheduled && attempt == 1 {
		f.Event(terms.EventRescheduled, el.Key, el.ID.ID, el.Done, nil)
	}
	f.Event(terms.EventStarted, el.Key, el.ID.ID, el.Done+attempt, nil)
}

// callWithin runs one call of the wrapped fn (call), with a deadline when
// limit > 0: a call still running at the deadline returns a timeoutError,
// whatever it returned, and no result.
func callWithin[R any](ctx context.Context, limit time.Duration, call func(context.Context) (R, error)) (R, error) {
	if limit <= 0 {
		return call(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	result, err := call(ctx)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		var none R
		return none, &terms.TimeoutError{Limit: limit, Err: err}
	}
	return result, err
}

// Teardown forwards Teardown to the wrapped fn once its running calls end.
func (f *Core) Teardown(ctx context.Context) error {
	if f.user == nil {
		return nil
	}
	return f.user.Close(ctx)
}

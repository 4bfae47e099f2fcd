package async

// What every DoFn of the transform shares at run time: the per-instance
// setup, and one element's way from prepare (encode, identify) through
// submit to the call of the wrapped fn (work).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
)

// core is what every DoFn of the transform shares: the configuration that
// Beam ships to workers (config) and what each DoFn instance rebuilds from it
// in Setup. The DoFns hold their state and timer fields themselves, because
// Beam looks for them at the top level only, and their per-bundle state.
type core struct {
	config

	clock    timers.Clock
	metrics  *metrics
	registry *state.Registry // nil: state.Default; tests model other workers
	user     *userFn
	keyEnc   beam.ElementEncoder
	keyDec   beam.ElementDecoder
	valEnc   beam.ElementEncoder
	valDec   beam.ElementDecoder
	// lastEvict is when this instance last looked for work to evict; the
	// scan is over the whole pool, so it runs at most once a second.
	lastEvict time.Time
}

// Setup rebuilds the wrapped fn, forwards its Setup, prepares coders, and
// makes sure the listener (if any) can be built in this process.
func (f *core) Setup(ctx context.Context) error {
	if f.clock == nil {
		f.clock = timers.System{}
	}
	u, err := startUserFn(ctx, f.User)
	if err != nil {
		return err
	}
	f.user = u
	f.metrics = newMetrics(f.Name)
	f.keyEnc = beam.NewElementEncoder(f.KeyType.T)
	f.keyDec = beam.NewElementDecoder(f.KeyType.T)
	f.valEnc = beam.NewElementEncoder(f.ValueType.T)
	f.valDec = beam.NewElementDecoder(f.ValueType.T)
	if f.Listener != nil {
		if _, err := f.reg().SharedValue(f.ID, func() (any, error) { return newHub(f.Listener) }); err != nil {
			return err
		}
	}
	return nil
}

// reg is the registry that holds this transform's per-process objects.
func (f *core) reg() *state.Registry {
	if f.registry == nil {
		return state.Default
	}
	return f.registry
}

// pool returns this transform's Pool in this process. It is looked up on
// every use rather than kept, so that a registry Reset (a simulated worker
// restart) is seen at once.
func (f *core) pool() (*state.Pool, error) {
	return f.reg().Shared(f.ID, f.poolConfig(f.clock.Now))
}

// prepare encodes one input element (kb: its key, if already encoded) and
// computes its identity and priority.
func (f *core) prepare(key, value any, kb []byte, ts beam.EventTime) (element, error) {
	if kb == nil {
		var err error
		if kb, err = encode(f.keyEnc, key); err != nil {
			return element{}, fmt.Errorf("async: encoding key %v: %w", key, err)
		}
	}
	vb, err := encode(f.valEnc, value)
	if err != nil {
		return element{}, fmt.Errorf("async: encoding value of key %v: %w", key, err)
	}
	id, err := f.identify(value, vb)
	if err != nil {
		return element{}, err
	}
	prio, err := f.priority(value)
	if err != nil {
		return element{}, err
	}
	return element{key: key, value: value, kb: kb, vb: vb, id: id, ts: ts, priority: prio}, nil
}

// element is one element about to be started.
type element struct {
	k          state.TaskKey
	key, value any
	// kb and vb are the key and value encoded with the input's coders, id
	// the element's identity within its key, ts its event time.
	kb, vb []byte
	id     string
	ts     beam.EventTime
	// done is how many attempts of the element failed before (from bag
	// state); fromState marks an element started from bag state by a
	// callback (EventRescheduled) rather than by ProcessElement.
	done      int
	priority  int
	fromState bool
	// window names the element's fixed window on the bundle path in the
	// global window (see taskID), empty otherwise.
	window string
}

// taskID identifies the element within a bundle: its key, its window when
// known (see config.FixedWindow) and its ID.
func (el element) taskID() string {
	return string(binary.AppendUvarint(nil, uint64(len(el.kb)))) + string(el.kb) + el.window + el.id
}

// submit starts the wrapped fn for one element, taking one of the pool's
// places, if there is room.
func (f *core) submit(ctx context.Context, pool *state.Pool, el element, wait time.Duration) (*state.Task, state.Admission, error) {
	if !f.user.hold() {
		return nil, state.NoRoom, fmt.Errorf("async: %s is already torn down", f.user.name)
	}
	job, k := f.job(el), el.k
	t, adm, err := pool.Submit(ctx, k, wait, job)
	if adm == state.NoRoom && err == nil && f.evictIdle(ctx, pool) {
		t, adm, err = pool.Submit(ctx, k, 0, job)
	}
	if adm != state.Started {
		f.user.release()
	} else {
		f.metrics.started.Inc(ctx, 1)
		t.AfterFinish(f.user.release)
	}
	return t, adm, err
}

// evictIdle removes, at most once a second, the work of owners gone from
// this worker (see state.Pool.EvictIdle), and reports whether it freed any
// place. The drain DoFn never evicts: its keys are quiet until their drain
// (leftovers of a drain retried elsewhere stay until this worker drains that
// key again or the job ends).
func (f *core) evictIdle(ctx context.Context, pool *state.Pool) bool {
	if f.QuietUntilDrain {
		return false
	}
	now := f.clock.Now()
	if now.Sub(f.lastEvict) < time.Second {
		return false
	}
	f.lastEvict = now
	evicted := pool.EvictIdle(now.Add(-f.staleAfter()))
	f.metrics.evicted.Inc(ctx, int64(len(evicted)))
	for _, t := range evicted {
		f.event(EventCancelled, f.decodeKey(keyOfOwner(t.Key.Owner)), t.Key.ID, t.Attempts(), nil)
	}
	return len(evicted) > 0
}

// startUnbuffered starts the wrapped fn for one element without taking a
// place (a drain's, or an ordered key's earliest element).
func (f *core) startUnbuffered(ctx context.Context, pool *state.Pool, el element) (*state.Task, error) {
	if !f.user.hold() {
		return nil, fmt.Errorf("async: %s is already torn down", f.user.name)
	}
	t, existing, err := pool.StartUnbuffered(el.k, f.job(el))
	if existing || err != nil {
		f.user.release()
	} else {
		f.metrics.started.Inc(ctx, 1)
		t.AfterFinish(f.user.release)
	}
	return t, err
}

// job is what the pool runs for one element.
func (f *core) job(el element) state.Job {
	return state.Job{Work: f.work(el), Retry: f.inWorkerRetry(el.k, el.key, el.done), Priority: el.priority}
}

// work is one element's call; attempt n of the task is attempt done+n of the
// element. The caller holds the user fn for the task; it is released when the
// task's last attempt returns (see release in userFn). An element started
// from bag state reports EventRescheduled here, as its first attempt begins,
// so that a listener sees it before EventStarted.
func (f *core) work(el element) state.Work {
	limit, key, id := f.CallTimeout, el.key, el.id
	return func(ctx context.Context, attempt int) ([]any, error) {
		n := el.done + attempt
		ctx = withAttempt(ctx, n, f.Fallbacks)
		ctx = context.WithValue(ctx, callKey{}, callInfo{f: f, key: key, id: id, attempt: n})
		if el.fromState && attempt == 1 {
			f.event(EventRescheduled, key, id, el.done, nil)
		}
		f.event(EventStarted, key, id, n, nil)
		outputs, err := f.callWithin(ctx, limit, key, el.value)
		if err == nil {
			f.event(EventSucceeded, key, id, n, nil)
		}
		return outputs, err
	}
}

// callWithin calls the wrapped fn once, with a deadline when limit > 0.
func (f *core) callWithin(ctx context.Context, limit time.Duration, key, value any) ([]any, error) {
	if limit <= 0 {
		return f.user.call(ctx, key, value)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	outputs, err := f.user.call(ctx, key, value)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, &timeoutError{limit: limit, err: err}
	}
	return outputs, err
}

// Teardown forwards Teardown to the wrapped fn once its running calls end.
func (f *core) Teardown(ctx context.Context) error {
	if f.user == nil {
		return nil
	}
	return f.user.close(ctx)
}

package async

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
)

// core is what the two stateful DoFns behind ParDo share (see streamFn and
// batchFn). Its exported fields are the configuration, shipped to workers as
// JSON; the rest is rebuilt in Setup. The DoFns hold the state and timer
// fields themselves, because Beam looks for them at the top level only.
type core struct {
	// ID names the transform's shared Pool in each worker process.
	ID string
	// Name is the transform's scope, the namespace of its metrics.
	Name                string
	User                userSpec
	KeyType             beam.EncodedType
	ValueType           beam.EncodedType
	IDFn                *beam.EncodedFunc
	Parallelism         int
	Buffer              int // in flight
	Held                int // in flight or awaiting commit
	CallbackFrequencyNs int64
	MaxWaitNs           int64
	CallTimeoutNs       int64
	MaxAttempts         int
	Backoff             Backoff
	RetryIf             *beam.EncodedFunc
	Fallbacks           []string
	// HasFailures is set by ParDoWithFailures: an element that fails for good
	// goes to the failure output instead of failing its key's commit.
	HasFailures bool
	// Ordered commits each key's results in acceptance order (WithOrdered).
	Ordered    bool
	PriorityFn *beam.EncodedFunc
	Listener   *listenerSpec

	clock    timers.Clock
	metrics  *metrics
	registry *state.Registry // nil: state.Default; tests model other workers
	user     *userFn
	keyEnc   beam.ElementEncoder
	keyDec   beam.ElementDecoder
	valEnc   beam.ElementEncoder
	valDec   beam.ElementDecoder
	// noWait is set once a wait for room timed out in the current
	// bundle: room comes only from commits in other bundles, so waiting again
	// would only stretch this one.
	noWait bool
	// lastEvict is when this instance last looked for stale results to evict;
	// the scan is over the whole pool, so it runs at most once a second.
	lastEvict time.Time
	// retryLocally makes failed attempts retry inside the pool, counted in
	// memory, instead of going back to bag state (bundleFn, drainFn).
	retryLocally bool
}

func (f *core) freq() time.Duration { return time.Duration(f.CallbackFrequencyNs) }

// staleAfter is how long a finished, uncommitted result may wait before the
// pool may evict it to make room: twenty commit rounds, and at least 30 s.
// Only a key that moved to another worker leaves results that long.
func (f *core) staleAfter() time.Duration { return max(20*f.freq(), 30*time.Second) }
func (f *core) maxWait() time.Duration    { return time.Duration(f.MaxWaitNs) }

// newCore checks everything about the transform that is not the input and
// the wrapped fn (already inspected as spec) and returns its configuration.
func newCore(name string, spec userSpec, keyT, valT reflect.Type, set settings, hasFailures bool) (core, error) {
	idFn, err := inspectIDFn(set.idFn, valT)
	if err != nil {
		return core{}, err
	}
	retryIf, err := inspectRetryIf(set.retryIf)
	if err != nil {
		return core{}, err
	}
	priorityFn, err := inspectPriority(set.priorityFn, valT)
	if err != nil {
		return core{}, err
	}
	listener, err := inspectListener(set.listener)
	if err != nil {
		return core{}, err
	}
	return core{
		Name:                name,
		ID:                  uuid.NewString(),
		User:                spec,
		KeyType:             beam.EncodedType{T: keyT},
		ValueType:           beam.EncodedType{T: valT},
		IDFn:                idFn,
		Parallelism:         set.parallelism,
		Buffer:              set.buffer,
		Held:                set.held,
		CallbackFrequencyNs: int64(set.freq),
		MaxWaitNs:           int64(set.maxWait),
		CallTimeoutNs:       int64(set.callTimeout),
		MaxAttempts:         set.maxAttempts,
		Backoff:             set.backoff,
		RetryIf:             retryIf,
		Fallbacks:           set.fallbacks,
		HasFailures:         hasFailures,
		Ordered:             set.ordered,
		PriorityFn:          priorityFn,
		Listener:            listener,
	}, nil
}

// Setup rebuilds the wrapped fn, forwards its Setup, prepares coders, and
// makes sure the listener (if any) can be built in this process.
func (f *core) Setup(ctx context.Context) error {
	if f.clock == nil {
		f.clock = timers.System{}
	}
	u, err := newUserFn(f.User)
	if err != nil {
		return err
	}
	if err := u.setup(ctx); err != nil {
		return fmt.Errorf("async: %w", err)
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
	// The pool remembers a key without tasks for twice the window in which
	// its elements count as busy (see streamFn.arm).
	return f.reg().Shared(f.ID, state.Config{Parallelism: f.Parallelism, Buffer: f.Buffer, Hold: f.Held, Now: f.clock.Now,
		Forget: max(4*f.freq(), 4*time.Second)})
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
}

// taskID identifies the element within a bundle: its key and its ID.
func (el element) taskID() string {
	return string(binary.AppendUvarint(nil, uint64(len(el.kb)))) + string(el.kb) + el.id
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
// place.
func (f *core) evictIdle(ctx context.Context, pool *state.Pool) bool {
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
	return state.Job{Work: f.work(el), Retry: f.localRetry(el.k, el.key, el.done), Priority: el.priority}
}

// localRetry is the in-pool retry policy when retryLocally is set: the same
// decision and backoff as a retry through bag state, counting the done
// attempts before this task.
func (f *core) localRetry(k state.TaskKey, key any, done int) state.Retry {
	if !f.retryLocally {
		return nil
	}
	seed := []byte(k.Owner + k.ID)
	return func(attempt int, err error) (time.Duration, bool) {
		total := done + attempt
		kind := kindOf(err)
		if ok, _ := f.retryable(kind, total, err); !ok {
			return 0, false
		}
		delay := f.Backoff.Delay(total, seed)
		f.event(EventRetrying, key, k.ID, total, func(e *Event) { e.Delay, e.Kind, e.Error = delay, kind, err.Error() })
		return delay, true
	}
}

// work is one element's call; attempt n of the task is attempt done+n of the
// element. The caller holds the user fn for the task; it is released when the
// task's last attempt returns (see release in userFn). An element started
// from bag state reports EventRescheduled here, as its first attempt begins,
// so that a listener sees it before EventStarted.
func (f *core) work(el element) state.Work {
	limit, key, id := time.Duration(f.CallTimeoutNs), el.key, el.id
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

// decodeKey decodes an encoded key for an event; on failure (which the
// transform's own encoding rules out) the event shows the raw bytes.
func (f *core) decodeKey(kb string) any {
	k, err := decode(f.keyDec, []byte(kb))
	if err != nil {
		return []byte(kb)
	}
	return k
}

// identify returns the element's ID within its key.
func (f *core) identify(value any, encoded []byte) (id string, err error) {
	if f.IDFn == nil {
		return state.DefaultID(encoded), nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("async: the ID function %s panicked on value %v: %v", f.IDFn.Fn.Name(), value, r)
		}
	}()
	return f.IDFn.Fn.Call([]any{value})[0].(string), nil
}

// Teardown forwards Teardown to the wrapped fn once its running calls end.
func (f *core) Teardown(ctx context.Context) error {
	if f.user == nil {
		return nil
	}
	return f.user.close(ctx)
}

func encode(enc beam.ElementEncoder, v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := enc.Encode(v, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decode(dec beam.ElementDecoder, b []byte) (any, error) {
	return dec.Decode(bytes.NewReader(b))
}

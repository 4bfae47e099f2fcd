package async

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
)

// Names of the transform's bag state and timer families, as they appear in
// the runner's job graph.
const (
	pendingStateID = "asyncPending"
	commitFamily   = "asyncCommit"
	drainFamily    = "asyncDrain"
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
	Buffer              int
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

	clock    timers.Clock
	metrics  *metrics
	registry *state.Registry // nil: state.Default; tests model other workers
	user     *userFn
	keyEnc   beam.ElementEncoder
	valEnc   beam.ElementEncoder
	valDec   beam.ElementDecoder
	// noWait is set once a wait for buffer room timed out in the current
	// bundle: room comes only from commits in other bundles, so waiting again
	// would only stretch this one.
	noWait bool
	// lastEvict is when this instance last looked for stale results to evict;
	// the scan is over the whole pool, so it runs at most once a second.
	lastEvict time.Time
	// retryLocally makes failed attempts retry inside the pool, counted in
	// memory, instead of going back to bag state (see batchFn).
	retryLocally bool
}

func (f *core) freq() time.Duration { return time.Duration(f.CallbackFrequencyNs) }

// staleAfter is how long a finished, uncommitted result may wait before the
// pool may evict it to make room: twenty commit rounds, and at least 30 s.
// Only a key that moved to another worker leaves results that long.
func (f *core) staleAfter() time.Duration { return max(20*f.freq(), 30*time.Second) }
func (f *core) maxWait() time.Duration    { return time.Duration(f.MaxWaitNs) }

// Setup rebuilds the wrapped fn, forwards its Setup, and prepares coders.
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
	f.valEnc = beam.NewElementEncoder(f.ValueType.T)
	f.valDec = beam.NewElementDecoder(f.ValueType.T)
	return nil
}

// pool returns this transform's Pool in this process. It is looked up on
// every use rather than kept, so that a registry Reset (a simulated worker
// restart) is seen at once.
func (f *core) pool() (*state.Pool, error) {
	r := f.registry
	if r == nil {
		r = state.Default
	}
	return r.Shared(f.ID, state.Config{Parallelism: f.Parallelism, Buffer: f.Buffer, Now: f.clock.Now})
}

// StartBundle resets the per-bundle wait flag.
func (f *core) StartBundle(_ context.Context, _ func(beam.Z), _ func(Failure)) {
	f.noWait = false
}

// accept takes one element: it is added to bag state and started if there is
// buffer room. It returns the encoded key, for the caller to set its timer.
func (f *core) accept(ctx context.Context, ts beam.EventTime, bag *beamstate.Bag[[]byte], sp beamstate.Provider, key, value any) ([]byte, error) {
	kb, err := encode(f.keyEnc, key)
	if err != nil {
		return nil, fmt.Errorf("async: encoding key %v: %w", key, err)
	}
	vb, err := encode(f.valEnc, value)
	if err != nil {
		return nil, fmt.Errorf("async: encoding value of key %v: %w", key, err)
	}
	id, err := f.identify(value, vb)
	if err != nil {
		return nil, err
	}
	if err := bag.Add(sp, state.Envelope{ID: id, EventTimeMs: int64(ts), Value: vb}.Encode()); err != nil {
		return nil, fmt.Errorf("async: adding to bag state: %w", err)
	}
	pool, err := f.pool()
	if err != nil {
		return nil, err
	}
	wait := f.maxWait()
	if f.noWait {
		wait = 0
	}
	_, adm, err := f.submit(ctx, pool, state.TaskKey{Key: string(kb), ID: id}, wait, key, value, 0)
	if err != nil {
		return nil, err
	}
	// A copy of a pending element (adm == Existing) is counted as
	// deduplicated when a callback drops its bag entry, not here.
	f.metrics.accepted.Inc(ctx, 1)
	if adm == state.NoRoom && wait > 0 {
		f.noWait = true
	}
	return kb, nil
}

// submit starts the wrapped fn for one element in the buffer, if there is
// room. done is how many attempts of the element have failed before.
func (f *core) submit(ctx context.Context, pool *state.Pool, k state.TaskKey, wait time.Duration, key, value any, done int) (*state.Task, state.Admission, error) {
	if !f.user.hold() {
		return nil, state.NoRoom, fmt.Errorf("async: %s is already torn down", f.user.name)
	}
	work, retry := f.work(key, value, done), f.localRetry(k, done)
	t, adm, err := pool.Submit(ctx, k, wait, work, retry)
	if now := f.clock.Now(); adm == state.NoRoom && err == nil && !f.retryLocally && now.Sub(f.lastEvict) >= time.Second {
		f.lastEvict = now
		if n := pool.EvictFinished(now.Add(-f.staleAfter())); n > 0 {
			f.metrics.cancelled.Inc(ctx, int64(n))
			t, adm, err = pool.Submit(ctx, k, 0, work, retry)
		}
	}
	if adm != state.Started {
		f.user.release()
	} else {
		f.metrics.started.Inc(ctx, 1)
		t.AfterFinish(f.user.release)
	}
	return t, adm, err
}

// startUnbuffered starts the wrapped fn for one element outside the buffer.
func (f *core) startUnbuffered(ctx context.Context, pool *state.Pool, k state.TaskKey, key, value any, done int) (*state.Task, error) {
	if !f.user.hold() {
		return nil, fmt.Errorf("async: %s is already torn down", f.user.name)
	}
	t, existing, err := pool.StartUnbuffered(k, f.work(key, value, done), f.localRetry(k, done))
	if existing || err != nil {
		f.user.release()
	} else {
		f.metrics.started.Inc(ctx, 1)
		t.AfterFinish(f.user.release)
	}
	return t, err
}

// localRetry is the in-pool retry policy when retryLocally is set: the same
// decision and backoff as a retry through bag state, counting the done
// attempts before this task.
func (f *core) localRetry(k state.TaskKey, done int) state.Retry {
	if !f.retryLocally {
		return nil
	}
	seed := []byte(k.Key + k.ID)
	return func(attempt int, err error) (time.Duration, bool) {
		total := done + attempt
		if ok, _ := f.retryable(kindOf(err), total, err); !ok {
			return 0, false
		}
		return f.Backoff.Delay(total, seed), true
	}
}

// work is one element's call; attempt n of the task is attempt done+n of the
// element. The caller holds the user fn for the task; it is released when the
// task's last attempt returns (see release in userFn).
func (f *core) work(key, value any, done int) state.Work {
	u, limit, fallbacks := f.user, time.Duration(f.CallTimeoutNs), f.Fallbacks
	return func(ctx context.Context, attempt int) ([]any, error) {
		ctx = withAttempt(ctx, done+attempt, fallbacks)
		if limit <= 0 {
			return u.call(ctx, key, value)
		}
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		outputs, err := u.call(ctx, key, value)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &timeoutError{limit: limit, err: err}
		}
		return outputs, err
	}
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

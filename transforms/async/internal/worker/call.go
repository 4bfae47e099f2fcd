package worker

// One element's way from prepare (encode, identify, priority) through
// submit to the pool, the job the pool runs for it (its call is in
// attempt.go), and its outputs' commit.

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// Prepare encodes one input element (kb: its key, if already encoded),
// takes its window from it when the input carries windows, and computes its
// value's ID (see Identify) and its priority. On unbounded input the ID is
// made unique among its key's elements at acceptance (the stream's acceptedID).
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

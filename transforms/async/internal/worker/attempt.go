package worker

// One attempt's call of the wrapped fn on the pool: what the listener
// hears as it begins, what its context carries, and its deadline.

import (
	"context"
	"errors"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

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

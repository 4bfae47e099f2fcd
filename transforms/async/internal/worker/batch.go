package worker

// A batch's call on the pool: items gathered by the pool's batcher go to
// the wrapped batch fn in one call, and each item gets its own answer.

import (
	"context"
	"runtime/debug"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/cache"
)

// BatchItem is what a request carries for one element.
type BatchItem struct {
	F  *Core
	El Element
	// After takes the element's answer and gives back its outcome: the
	// result cache's (see Cached), or nil. A value for the shared cache is
	// handed to store, to be written with the request's others.
	After func(ctx context.Context, attempt int, answer func() ([]any, error), store func(cache.Entry)) ([]any, error)
}

// batchJob makes job, the job of el, a batch member.
func (f *Core) batchJob(el Element, job state.Job) state.Job {
	if f.Batch == nil {
		return job
	}
	job.Item = &BatchItem{F: f, El: el}
	if f.Batch.PerKey {
		job.BatchGroup = el.ID.Key + "\x00" + el.ID.Window
	}
	return job
}

// SendBatch is the pool's BatchSend: one call of the wrapped fn's
// ProcessBatch, through the instance of the first element (every element
// of a request is of one transform, and its fn's instances are alike).
func SendBatch(ctx context.Context, items []state.BatchItem) (outcomes []state.Outcome, err error) {
	members := make([]*BatchItem, len(items))
	settled := make([]bool, len(items))
	defer func() {
		// Whatever panicked here, every element's after runs once: a cache
		// lead it holds must end, or its lookup's copies would wait for good.
		if r := recover(); r != nil {
			outcomes, err = nil, &state.PanicError{Value: r, Stack: debug.Stack()}
			for i, b := range members {
				if b != nil && b.After != nil && !settled[i] {
					answerItem(b, items[i], nil, err, nil)
				}
			}
		}
	}()
	keys, values := make([]any, len(items)), make([]any, len(items))
	for i, it := range items {
		b := it.Item.(*BatchItem)
		members[i], keys[i], values[i] = b, b.El.Key, b.El.Value
	}
	for i, it := range items { // after members is whole: a panic here still ends every lead
		members[i].F.attemptBegins(members[i].El, it.Attempt)
	}
	f := members[0].F
	f.batchStats().observe(len(items))
	res, err := callWithin(ctx, f.CallTimeout, func(ctx context.Context) (batchResult, error) {
		outs, errs, err := f.user.CallBatch(ctx, keys, values)
		return batchResult{outs, errs}, err
	})
	outs, errs := res.outs, res.errs
	outcomes = make([]state.Outcome, len(items))
	var stored []cache.Entry
	for i, b := range members {
		var o []any
		e := err
		if err == nil {
			o, e = outs[i], errs[i]
		}
		if b.After != nil {
			settled[i] = true
			o, e = answerItem(b, items[i], o, e, func(en cache.Entry) { stored = append(stored, en) })
		}
		if e == nil && b.F.User.Enrich != nil {
			o, e = b.F.User.Enrich.JoinAnswer(b.El.Value, o) // after the cache, which keeps answers
		}
		if e == nil {
			b.F.Event(terms.EventSucceeded, b.El.Key, b.El.ID.ID, b.El.Done+items[i].Attempt, nil)
		}
		outcomes[i] = state.Outcome{Outputs: o, Err: e}
	}
	if len(stored) > 0 {
		if rc, _ := f.ResultCache(); rc != nil && rc.shared != nil {
			rc.shared.SetMany(ctx, stored)
		}
	}
	return outcomes, err
}

// answerItem runs an element's after with its answer; a panic there (an
// output coder) fails that element alone, after after has ended its part
// of the single flight.
func answerItem(b *BatchItem, it state.BatchItem, outs []any, err error, store func(cache.Entry)) (o []any, e error) {
	defer func() {
		if r := recover(); r != nil {
			o, e = nil, &state.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return b.After(it.Ctx, it.Attempt, func() ([]any, error) { return outs, err }, store)
}

// batchResult is what one call of a batch fn returns besides its error:
// each element's outputs and error.
type batchResult struct {
	outs [][]any
	errs []error
}

// batchConfig is the pool's batching for this transform.
func batchConfig(c *terms.Config) *state.BatchConfig {
	if c.Batch == nil {
		return nil
	}
	return &state.BatchConfig{Size: c.Batch.Size, Wait: c.Batch.Wait, Send: SendBatch}
}

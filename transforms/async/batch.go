package async

// BatchParDo: the wrapped fn takes many elements per call (a bulk endpoint,
// a model server, a multi-get), while every element keeps its own commit,
// retries, failure record, timestamp and window. The pool gathers the
// batches and counts requests (state.BatchConfig); this file holds the
// constructors, and batchoptions.go the options.

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// BatchParDo is TryBatchParDo that panics on error.
func BatchParDo(s beam.Scope, fn any, col beam.PCollection, opts ...Option) beam.PCollection {
	out, err := TryBatchParDo(s, fn, col, opts...)
	if err != nil {
		panic(err)
	}
	return out
}

// BatchParDoWithFailures is TryBatchParDoWithFailures that panics on error.
func BatchParDoWithFailures(s beam.Scope, fn any, col beam.PCollection, opts ...Option) (out, failures beam.PCollection) {
	out, failures, err := TryBatchParDoWithFailures(s, fn, col, opts...)
	if err != nil {
		panic(err)
	}
	return out, failures
}

// TryBatchParDo is TryParDo for a fn that takes many elements per call. fn
// is a pointer to a registered struct whose method ProcessBatch has the form
//
//	ProcessBatch([ctx context.Context,] keys []K, values []V, emit func(i int, out O)) [error | ([]error, error)]
//
// (with optional Setup, Teardown and Revert, not StartBundle or
// FinishBundle), or a registered top-level function of that form. One call
// gets up to WithBatchSize elements, from any keys (WithBatchPerKey: from
// one key), as parallel lists. emit(i, out) adds an output of element i.
// The []error, if not nil, has one entry per element: a non-nil entry fails
// that element's attempt (its outputs are dropped) and the others succeed.
// The last error fails the whole request: the attempt of every element in
// it. An output pair that cannot be encoded fails its element for good
// (Permanent), not the request.
//
// Everything else is as under TryParDo, per element: each element is
// committed exactly once with its own timestamp and window; a failed
// element is retried (WithMaxAttempts) in a later request, batched again
// with others, and only it; WithCallTimeout bounds a request; failure
// records and Revert are per element; a cached element (WithCache) is never
// sent. WithParallelism, the guard's limits and the retry budget count
// requests, not elements, and see a request's own error only: an element's
// error in the []error, even an Overloaded one, is that element's (return
// the request's error for an answer such as 429 or 503). WithFallbacks does
// not apply; ctx carries no element, so Attempt and ReportProgress do not
// apply inside ProcessBatch either. A batch waits for its call slot with
// the priority of the element that made it ready (WithPriority).
func TryBatchParDo(s beam.Scope, fn any, col beam.PCollection, opts ...Option) (beam.PCollection, error) {
	outs, err := buildBatch(s.Scope("async.BatchParDo"), fn, col, false, opts)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("async.BatchParDo: %w", err)
	}
	return outs[0], nil
}

// TryBatchParDoWithFailures is TryBatchParDo with the failure output of
// TryParDoWithFailures.
func TryBatchParDoWithFailures(s beam.Scope, fn any, col beam.PCollection, opts ...Option) (out, failures beam.PCollection, err error) {
	outs, err := buildBatch(s.Scope("async.BatchParDoWithFailures"), fn, col, true, opts)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, fmt.Errorf("async.BatchParDoWithFailures: %w", err)
	}
	return outs[0], outs[1], nil
}

func buildBatch(s beam.Scope, fn any, col beam.PCollection, hasFailures bool, opts []Option) ([]beam.PCollection, error) {
	return buildParDo(s, fn, col, hasFailures, append([]Option{batched}, opts...))
}

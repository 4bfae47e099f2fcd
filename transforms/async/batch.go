package async

// BatchParDo: the wrapped fn takes many elements per call (a bulk endpoint,
// a model server, a multi-get), while every element keeps its own commit,
// retries, failure record, timestamp and window. The pool gathers the
// batches and counts requests (state.BatchConfig); this file is the
// transform's side: its options, what a request carries for an element,
// and the request itself.

import (
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// DefaultBatchSize is BatchParDo's batch size when WithBatchSize is not
// given.
const DefaultBatchSize = 50

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
	return build(s, fn, col, hasFailures, append([]Option{batched}, opts...))
}

// batched marks the settings of a BatchParDo (always its first option).
func batched(s *settings) { s.batch.on = true }

// batchSettings are the batch options.
type batchSettings struct {
	on     bool // BatchParDo
	size   int  // 0: DefaultBatchSize
	wait   time.Duration
	perKey bool
	given  []string // batch options given, for the error under ParDo
}

// WithBatchSize sets the most elements in one call of a BatchParDo's fn
// (BatchEnrich: keys in one call of its lookup).
// Must be > 0. Default: DefaultBatchSize (50).
func WithBatchSize(n int) Option {
	return func(s *settings) {
		s.batch.given = append(s.batch.given, fmt.Sprintf("WithBatchSize(%d)", n))
		if n <= 0 {
			s.errs = append(s.errs, fmt.Errorf("WithBatchSize(%d): the batch size must be > 0", n))
			return
		}
		s.batch.size = n
	}
}

// WithBatchWait sets how long a batch (of BatchParDo or BatchEnrich) that
// is not full waits for more elements after its first, before it asks for a call slot. Whatever the
// wait, a batch goes on gathering until it has a slot: at capacity batches
// fill without any wait. Default: 0 (no added latency); set it when the
// service is cheaper per element in full batches than it is slow.
func WithBatchWait(d time.Duration) Option {
	return func(s *settings) {
		s.batch.given = append(s.batch.given, fmt.Sprintf("WithBatchWait(%v)", d))
		if d < 0 {
			s.errs = append(s.errs, fmt.Errorf("WithBatchWait(%v): the wait must be >= 0", d))
			return
		}
		s.batch.wait = d
	}
}

// WithBatchPerKey makes each call of a BatchParDo's fn take the elements of
// one key only (and, off the global window, of one window), for services
// that want a key's items together. Default: batches mix keys.
func WithBatchPerKey() Option {
	return func(s *settings) {
		s.batch.given = append(s.batch.given, "WithBatchPerKey()")
		s.batch.perKey = true
	}
}

// resolveBatch checks the batch options and sizes the buffers for batches:
// Parallelism requests of Size elements in flight, as many gathering; and
// the held bound by async.ParDo's rule (64 × the elements in flight at
// once), so that it does not cap unbounded throughput below the batches'
// limit for requests of 16 ms or more.
func (s *settings) resolveBatch() {
	b := &s.batch
	if !b.on {
		if len(b.given) > 0 {
			s.errs = append(s.errs, fmt.Errorf("%s: batch options apply to async.BatchParDo and async.BatchEnrich, whose fn takes many elements per call; async.ParDo and async.Enrich call per element", b.given[0]))
		}
		return
	}
	if b.size == 0 {
		b.size = DefaultBatchSize
	}
	if len(s.fallbacks) > 0 {
		s.errs = append(s.errs, errors.New("WithFallbacks does not apply to async.BatchParDo or async.BatchEnrich: the elements of one request are at different attempts; read the attempt per element from your own state, or use async.ParDo or async.Enrich"))
	}
	if s.buffer == 0 {
		s.buffer = max(2*s.parallelism*b.size, 10)
	}
	if s.held == 0 {
		s.held = max(64*s.parallelism*b.size, s.buffer)
	}
}

func newBatchSpec(b batchSettings) *terms.BatchSpec {
	if !b.on {
		return nil
	}
	return &terms.BatchSpec{Size: b.size, Wait: b.wait, PerKey: b.perKey}
}

package async

// BatchEnrich: Enrich whose lookup takes many keys per call (a multi-get, a
// bulk endpoint). Records, cache, single flight and join are Enrich's; the
// requests are BatchParDo's.

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// BatchEnrich is TryBatchEnrich that panics on error.
func BatchEnrich(s beam.Scope, lookup any, records beam.PCollection, join any, opts ...Option) beam.PCollection {
	out, err := TryBatchEnrich(s, lookup, records, join, opts...)
	if err != nil {
		panic(err)
	}
	return out
}

// BatchEnrichWithFailures is TryBatchEnrichWithFailures that panics on
// error.
func BatchEnrichWithFailures(s beam.Scope, lookup any, records beam.PCollection, join any, opts ...Option) (out, failures beam.PCollection) {
	out, failures, err := TryBatchEnrichWithFailures(s, lookup, records, join, opts...)
	if err != nil {
		panic(err)
	}
	return out, failures
}

// TryBatchEnrich is TryEnrich for a lookup that takes many keys per call:
// a registered top-level function, or a pointer to a registered struct
// with a LookupBatch method (and optional Setup and Teardown), of the form
//
//	func([ctx context.Context,] keys []LK) []A
//	func([ctx context.Context,] keys []LK) ([]A, error)
//	func([ctx context.Context,] keys []LK) ([]A, []error, error)
//
// answers[i] is the answer for keys[i] (answers may be nil when every key
// failed). The []error, if not nil, has one entry per key: a non-nil entry
// fails that key's lookup, as a lookup's error does under TryEnrich; the
// last error fails the whole request.
//
// A request holds up to WithBatchSize keys, gathered as TryBatchParDo
// gathers elements (WithBatchWait). With the cache (the default, as under
// TryEnrich) a key is in at most one request of a worker at a time and its
// other records wait for the answer; with WithoutCache every record is its
// own lookup, so a request may repeat a key. The join runs per record, as
// under TryEnrich. WithBatchPerKey does not apply.
func TryBatchEnrich(s beam.Scope, lookup any, records beam.PCollection, join any, opts ...Option) (beam.PCollection, error) {
	outs, err := buildEnrich(s.Scope("async.BatchEnrich"), lookup, records, join, true, false, opts)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("async.BatchEnrich: %w", err)
	}
	return outs[0], nil
}

// TryBatchEnrichWithFailures is TryBatchEnrich with the failure output of
// TryEnrichWithFailures.
func TryBatchEnrichWithFailures(s beam.Scope, lookup any, records beam.PCollection, join any, opts ...Option) (out, failures beam.PCollection, err error) {
	outs, err := buildEnrich(s.Scope("async.BatchEnrichWithFailures"), lookup, records, join, true, true, opts)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, fmt.Errorf("async.BatchEnrichWithFailures: %w", err)
	}
	return outs[0], outs[1], nil
}

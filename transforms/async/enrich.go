package async

// Enrich: look something up by a record's key and merge the answer into the
// record (Beam Python's Enrichment). The lookup is the wrapped fn, called
// with the key only, and the result cache keeps its answer per key; the
// join runs per record, after the answer, whether the answer was called for
// or cached. BatchEnrich is Enrich whose lookup takes many keys per call (a
// multi-get, a bulk endpoint): its requests are BatchParDo's.

import (
	"fmt"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// defaultEnrichCache is the cache Enrich uses without WithCache: each
// worker keeps up to 10,000 answers for 10 minutes.
func defaultEnrichCache() Cache { return Cache{Size: 10_000, TTL: 10 * time.Minute} }

// Enrich is TryEnrich that panics on error.
func Enrich(s beam.Scope, lookup any, records beam.PCollection, join any, opts ...Option) beam.PCollection {
	out, err := TryEnrich(s, lookup, records, join, opts...)
	if err != nil {
		panic(err)
	}
	return out
}

// EnrichWithFailures is TryEnrichWithFailures that panics on error.
func EnrichWithFailures(s beam.Scope, lookup any, records beam.PCollection, join any, opts ...Option) (out, failures beam.PCollection) {
	out, failures, err := TryEnrichWithFailures(s, lookup, records, join, opts...)
	if err != nil {
		panic(err)
	}
	return out, failures
}

// TryEnrich looks up an answer for each record of records, a
// PCollection<KV<LK, R>> keyed by the lookup key, asynchronously, and
// returns the PCollection<O> of join(record, answer), one output per record,
// with the record's timestamp and window.
//
// lookup is a registered top-level function, or a pointer to a registered
// struct (beam.RegisterType) with a Lookup method and optional Setup and
// Teardown:
//
//	func([ctx context.Context,] key LK) (A [, error])
//	func (l *L) Lookup([ctx context.Context,] key LK) (A [, error])
//
// join is a registered top-level function
//
//	func(record R, answer A) O
//	func(record R, answer A) (O, error)
//
// A lookup is made once per key, not per record: answers are cached per key
// (WithCache; without it 10,000 answers for 10 minutes per worker), and
// records of a key whose lookup is in flight wait for it (single flight)
// holding no call slot. Cache.KeyFn is refused: the cache key is the
// record's key. WithoutCache makes each record its own lookup, for answers
// that may change from one record to the next. A failed lookup is retried
// as the options say (it is not cached) and fails each of its records; a
// join that returns an error or panics fails its record for good
// (Permanent), never retried. Every other Option (rate limits, retries,
// timeouts, windows, unbounded input) works as under ParDo; for a lookup
// that takes many keys per call, see TryBatchEnrich.
//
// A record that fails for good fails its key's commit with the cause; use
// TryEnrichWithFailures to receive such records as data.
func TryEnrich(s beam.Scope, lookup any, records beam.PCollection, join any, opts ...Option) (beam.PCollection, error) {
	outs, err := buildEnrich(s.Scope("async.Enrich"), lookup, records, join, false, false, opts)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("async.Enrich: %w", err)
	}
	return outs[0], nil
}

// TryEnrichWithFailures is TryEnrich with a second output: the
// PCollection<Failure> of records that failed for good (their lookup's
// attempts exhausted or Permanent, or their join failed), each written there
// once, with Key the lookup key LK and Value the record R (DecodeFailure[LK,
// R] reads them).
func TryEnrichWithFailures(s beam.Scope, lookup any, records beam.PCollection, join any, opts ...Option) (out, failures beam.PCollection, err error) {
	outs, err := buildEnrich(s.Scope("async.EnrichWithFailures"), lookup, records, join, false, true, opts)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, fmt.Errorf("async.EnrichWithFailures: %w", err)
	}
	return outs[0], outs[1], nil
}

// buildEnrich is buildParDo for Enrich and BatchEnrich (batch): the lookup is the
// wrapped fn, and the cache defaults to defaultEnrichCache.
func buildEnrich(s beam.Scope, lookup any, records beam.PCollection, join any, batch, hasFailures bool, opts []Option) ([]beam.PCollection, error) {
	if batch {
		opts = append([]Option{batched}, opts...)
	}
	return buildWith(s, records, hasFailures, opts, func(keyT, valT reflect.Type, set *settings) (wrapped.Spec, reflect.Type, error) {
		switch {
		case set.cache == nil && !set.noCache:
			c := defaultEnrichCache()
			set.cache = &c
		case set.cache != nil && set.cache.KeyFn != nil:
			return wrapped.Spec{}, nil, fmt.Errorf("WithCache: Enrich caches by the lookup key, the input's key; drop KeyFn")
		}
		if set.batch.perKey {
			return wrapped.Spec{}, nil, fmt.Errorf("WithBatchPerKey: a BatchEnrich request is a list of lookup keys, one call for many keys; drop it")
		}
		form := wrapped.SingleLookup
		if batch {
			form = wrapped.BatchLookup
		}
		return wrapped.InspectEnrich(lookup, join, keyT, valT, form)
	})
}

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

package async

// BatchEnrich: Enrich whose lookup takes many keys per call (a multi-get, a
// bulk endpoint). Records, cache, single flight and join are Enrich's; the
// requests are BatchParDo's.

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// lookupBatchShape is quoted by every error about a batch lookup's
// signature.
const lookupBatchShape = "a registered top-level function ([ctx context.Context,] keys []LK) ([]A | ([]A, error) | ([]A, []error, error)), " +
	"or a pointer to a registered struct with a method LookupBatch of that form (and optional Setup, Teardown)"

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

// analyzeLookupBatch checks a batch lookup's type (without receiver)
// against the input's key type keyT and returns the answer's type A.
func analyzeLookupBatch(ft, keyT reflect.Type, what string) (reflect.Type, error) {
	bad := func(format string, args ...any) (reflect.Type, error) {
		return nil, fmt.Errorf("%s has signature %v: %s; want %s with LK=%v", what, ft, fmt.Sprintf(format, args...), lookupBatchShape, keyT)
	}
	if ft.Kind() != reflect.Func || ft.IsVariadic() {
		return bad("it is not a function of fixed parameters")
	}
	in := paramsAfterContext(ft)
	if len(in) != 1 {
		return bad("it takes %d parameters after the context; want the keys only (the join gets the records)", len(in))
	}
	if in[0].Kind() != reflect.Slice || !keyT.AssignableTo(in[0].Elem()) {
		return bad("the keys parameter is %v but the input's keys are %v", in[0], keyT)
	}
	switch {
	case ft.NumOut() == 1, ft.NumOut() == 2 && ft.Out(1) == errorType,
		ft.NumOut() == 3 && ft.Out(1) == errorsType && ft.Out(2) == errorType:
	default:
		return bad("it returns %d values; want []A, ([]A, error) or ([]A, []error, error)", ft.NumOut())
	}
	if ft.Out(0).Kind() != reflect.Slice || ft.Out(0) == errorsType {
		return bad("its first result is %v; want the answers, a slice []A with one per key", ft.Out(0))
	}
	return ft.Out(0).Elem(), nil
}

// callLookupBatch calls a batch lookup once for keys and returns each
// key's answer (as its one output) and error, or the request's error; ft
// is the lookup's type (without receiver). A list of answers or errors of
// another length than keys fails the request.
func (u *userFn) callLookupBatch(ctx context.Context, keys []any) (outs [][]any, errs []error, err error) {
	ft := u.batch.ft
	n := len(keys)
	args := make([]reflect.Value, 0, 2)
	if ft.In(0) == contextType {
		args = append(args, reflect.ValueOf(ctx))
	}
	kt := ft.In(len(args))
	ks := reflect.MakeSlice(kt, n, n)
	for i := range keys {
		ks.Index(i).Set(valueOf(keys[i], kt.Elem()))
	}
	res := u.batch.call(append(args, ks))
	switch len(res) {
	case 2:
		err, _ = res[1].(error)
	case 3:
		errs, _ = res[1].([]error)
		err, _ = res[2].(error)
	}
	if err != nil {
		return nil, nil, err
	}
	answers := reflect.ValueOf(res[0])
	switch {
	case answers.Len() == 0 && n > 0 && len(errs) == n && !slices.Contains(errs, nil):
		return make([][]any, n), errs, nil // every key failed: no answers needed
	case answers.Len() != n:
		return nil, nil, fmt.Errorf("%s returned %d answers; want %d, one per key, in the keys' order", u.name, answers.Len(), n)
	case errs != nil && len(errs) != n:
		return nil, nil, fmt.Errorf("%s returned %d errors; want %d, one per key (nil for a success), or a nil list", u.name, len(errs), n)
	}
	if errs == nil {
		errs = make([]error, n)
	}
	outs = make([][]any, n)
	for i := range outs {
		if errs[i] == nil {
			outs[i] = []any{answers.Index(i).Interface()}
		}
	}
	return outs, errs, nil
}

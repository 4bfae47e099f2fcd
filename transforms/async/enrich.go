package async

// Enrich: look something up by a record's key and merge the answer into the
// record (Beam Python's Enrichment). The lookup is the wrapped fn, called
// with the key only, and the result cache keeps its answer per key; the
// join runs per record, after the answer, whether the answer was called for
// or cached.

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/asyncbeam/asyncbeam/state"
)

// defaultEnrichCache is the cache Enrich uses without WithCache: each
// worker keeps up to 10,000 answers for 10 minutes.
func defaultEnrichCache() Cache { return Cache{Size: 10_000, TTL: 10 * time.Minute} }

// lookupShape and joinShape are quoted by every error about the lookup's or
// the join's signature.
const (
	lookupShape = "a registered top-level function ([ctx context.Context,] key LK) (A [, error]), " +
		"or a pointer to a registered struct with a method Lookup([ctx context.Context,] key LK) (A [, error]) (and optional Setup, Teardown)"
	joinShape = "a registered top-level function (record R, answer A) O or (record R, answer A) (O, error)"
)

// enrichSpec is what the spec of an Enrich lookup carries besides the
// lookup: the join and the answer's type, with which the result cache
// encodes answers.
type enrichSpec struct {
	Join   *shippedFunc
	Answer beam.EncodedType
}

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

// buildEnrich is build for Enrich and BatchEnrich (batch): the lookup is the
// wrapped fn, and the cache defaults to defaultEnrichCache.
func buildEnrich(s beam.Scope, lookup any, records beam.PCollection, join any, batch, hasFailures bool, opts []Option) ([]beam.PCollection, error) {
	if batch {
		opts = append([]Option{batched}, opts...)
	}
	return buildWith(s, records, hasFailures, opts, func(keyT, valT reflect.Type, set *settings) (userSpec, reflect.Type, error) {
		switch {
		case set.cache == nil && !set.noCache:
			c := defaultEnrichCache()
			set.cache = &c
		case set.cache != nil && set.cache.KeyFn != nil:
			return userSpec{}, nil, fmt.Errorf("WithCache: Enrich caches by the lookup key, the input's key; drop KeyFn")
		}
		if set.batch.perKey {
			return userSpec{}, nil, fmt.Errorf("WithBatchPerKey: a BatchEnrich request is a list of lookup keys, one call for many keys; drop it")
		}
		form := singleLookup
		if batch {
			form = batchLookup
		}
		return inspectEnrich(lookup, join, keyT, valT, form)
	})
}

// lookupForm is one form of Enrich's lookup: one key per call (Enrich) or
// many (BatchEnrich).
type lookupForm struct {
	method  string   // the struct method
	shape   string   // what a lookup may be, in errors
	bundled []string // struct methods refused besides the lookup (bundle methods)
	// answer checks the lookup's type (without receiver) against the
	// input's key type and returns the answer's type A.
	answer func(ft, keyT reflect.Type, what string) (reflect.Type, error)
	batch  bool
}

var (
	singleLookup = lookupForm{method: "Lookup", shape: lookupShape, answer: func(ft, keyT reflect.Type, what string) (reflect.Type, error) {
		shape, err := analyzeLookup(ft, keyT, what)
		return shape.out.value, err
	}}
	batchLookup = lookupForm{method: "LookupBatch", shape: lookupBatchShape, bundled: []string{"StartBundle", "FinishBundle"},
		answer: analyzeLookupBatch, batch: true}
)

// inspectEnrich checks the lookup (of form) against the input's key type
// and the join against the input's value type and the lookup's answer, and
// returns the spec shipped to workers and the join's output type.
func inspectEnrich(lookup, join any, keyT, valT reflect.Type, form lookupForm) (userSpec, reflect.Type, error) {
	if lookup == nil {
		return userSpec{}, nil, fmt.Errorf("lookup is nil: pass %s", form.shape)
	}
	var spec userSpec
	var answerT reflect.Type
	v := reflect.ValueOf(lookup)
	switch {
	case v.Kind() == reflect.Func:
		a, err := form.answer(v.Type(), keyT, "lookup")
		if err != nil {
			return userSpec{}, nil, err
		}
		encoded, err := encodeFunc("lookup", lookup)
		if err != nil {
			return userSpec{}, nil, err
		}
		spec, answerT = userSpec{Func: encoded}, a
	case v.Kind() == reflect.Ptr && v.Type().Elem().Kind() == reflect.Struct:
		t, err := registeredStruct("lookup", v)
		if err != nil {
			return userSpec{}, nil, err
		}
		m, ok := v.Type().MethodByName(form.method)
		if !ok {
			return userSpec{}, nil, fmt.Errorf("lookup %v has no %s method; want %s", v.Type(), form.method, form.shape)
		}
		if answerT, err = form.answer(methodType(m), keyT, fmt.Sprintf("%v.%s", v.Type(), form.method)); err != nil {
			return userSpec{}, nil, err
		}
		for _, name := range form.bundled {
			if _, ok := v.Type().MethodByName(name); ok {
				return userSpec{}, nil, fmt.Errorf("lookup %v has %s: a batch lookup may have Setup and Teardown, not bundle methods (a request is not a bundle)", v.Type(), name)
			}
		}
		for _, name := range lifecycle {
			if m, ok := v.Type().MethodByName(name); ok {
				if err := checkLifecycle(name, methodType(m), nil); err != nil {
					return userSpec{}, nil, fmt.Errorf("lookup %v: %w", v.Type(), err)
				}
			}
		}
		if spec, err = structSpec(lookup, t); err != nil {
			return userSpec{}, nil, err
		}
	default:
		return userSpec{}, nil, fmt.Errorf("lookup is a %v: want %s", v.Type(), form.shape)
	}
	joinFn, outT, err := inspectJoin(join, valT, answerT)
	if err != nil {
		return userSpec{}, nil, err
	}
	spec.Batch = form.batch
	spec.Enrich = &enrichSpec{Join: joinFn, Answer: beam.EncodedType{T: answerT}}
	return spec, outT, nil
}

// analyzeLookup reads a lookup's type (without receiver): the shape of a
// wrapped fn that takes the key only and returns one output, the answer.
// With keyT not nil it checks the key parameter against it; a worker passes
// nil.
func analyzeLookup(ft reflect.Type, keyT reflect.Type, what string) (procShape, error) {
	bad := func(format string, args ...any) (procShape, error) {
		return procShape{}, fmt.Errorf("%s has signature %v: %s; want %s with LK=%v", what, ft, fmt.Sprintf(format, args...), lookupShape, keyT)
	}
	var s procShape
	i := 0
	if i < ft.NumIn() && ft.In(i) == contextType {
		s.params, i = append(s.params, paramContext), i+1
	}
	if ft.NumIn()-i != 1 {
		return bad("it takes %d parameters after the context; want the key only (the join gets the record)", ft.NumIn()-i)
	}
	if keyT != nil && !keyT.AssignableTo(ft.In(i)) {
		return bad("the key parameter is %v but the input's keys are %v", ft.In(i), keyT)
	}
	s.params = append(s.params, paramKey)
	n := ft.NumOut()
	if n > 0 && ft.Out(n-1) == errorType {
		s.returnsError, n = true, n-1
	}
	if n != 1 {
		return bad("it returns %d values besides an error; want one answer A", n)
	}
	s.returned, s.out = 1, outputShape{value: ft.Out(0)}
	return s, nil
}

// inspectJoin checks join against the records' type R and the answer's
// type A and returns it encoded and its output type O.
func inspectJoin(join any, valT, answerT reflect.Type) (*shippedFunc, reflect.Type, error) {
	if join == nil {
		return nil, nil, fmt.Errorf("join is nil: pass %s", joinShape)
	}
	ft := reflect.TypeOf(join)
	want := fmt.Sprintf("%s with R=%v, A=%v", joinShape, valT, answerT)
	if ft.Kind() != reflect.Func || ft.IsVariadic() || ft.NumIn() != 2 {
		return nil, nil, fmt.Errorf("join has type %v; want %s", ft, want)
	}
	if !valT.AssignableTo(ft.In(0)) {
		return nil, nil, fmt.Errorf("join has type %v: its first parameter is %v but the records (the input's values) are %v; want %s", ft, ft.In(0), valT, want)
	}
	if !answerT.AssignableTo(ft.In(1)) {
		return nil, nil, fmt.Errorf("join has type %v: its second parameter is %v but the lookup answers %v; want %s", ft, ft.In(1), answerT, want)
	}
	switch {
	case ft.NumOut() == 1 && ft.Out(0) != errorType:
	case ft.NumOut() == 2 && ft.Out(1) == errorType && ft.Out(0) != errorType:
	default:
		return nil, nil, fmt.Errorf("join has type %v: it returns %d values; want %s", ft, ft.NumOut(), want)
	}
	if typex.IsKV(typex.New(ft.Out(0))) {
		return nil, nil, fmt.Errorf("join has type %v: it returns a KV; return a struct, and key it after the transform", ft)
	}
	encoded, err := encodeFunc("join", join)
	if err != nil {
		return nil, nil, err
	}
	return encoded, ft.Out(0), nil
}

// joinAnswer merges the answer into record; an error or a panic of the join
// is a Permanent error: the lookup succeeded, and calling it again would
// give the same answer.
func (e *enrichSpec) joinAnswer(record any, outs []any) (out []any, err error) {
	if len(outs) != 1 {
		return nil, Permanent(fmt.Errorf("async: the lookup gave %d answers; want 1", len(outs)))
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, Permanent(fmt.Errorf("join %s panicked: %v\n%s", e.Join.fn.Name(), r, debug.Stack()))
		}
	}()
	ft := e.Join.fn.Type()
	res := e.Join.fn.Call([]any{valueOf(record, ft.In(0)).Interface(), valueOf(outs[0], ft.In(1)).Interface()})
	if len(res) == 2 {
		if err, _ := res[1].(error); err != nil {
			return nil, Permanent(fmt.Errorf("join: %w", err))
		}
	}
	return []any{res[0]}, nil
}

// joined turns an Enrich element's job, whose work and cache answer [A],
// into one that outputs [join(record, A)]. It wraps the cache (f.cached),
// so that the cache keeps answers, not one record's output.
func (f *core) joined(el element, job state.Job) state.Job {
	e := f.User.Enrich
	if e == nil {
		return job
	}
	work := job.Work
	job.Work = func(ctx context.Context, attempt int) ([]any, error) {
		outs, err := work(ctx, attempt)
		if err != nil {
			return outs, err
		}
		return e.joinAnswer(el.value, outs)
	}
	if lookup := job.Lookup; lookup != nil {
		job.Lookup = func(ctx context.Context) state.Lookup {
			l := lookup(ctx)
			if !l.Hit {
				return l
			}
			outs, err := e.joinAnswer(el.value, l.Outputs)
			if err != nil {
				return state.Lookup{Err: err}
			}
			l.Outputs = outs
			return l
		}
	}
	return job
}

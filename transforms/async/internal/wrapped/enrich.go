package wrapped

// Enrich's lookup and join: their shapes, checked at construction, and the
// join of a record with its lookup's answer on a worker.

import (
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
)

// LookupForm is one form of Enrich's lookup: one key per call (Enrich) or
// many (BatchEnrich).
type LookupForm struct {
	method  string   // the struct method
	shape   string   // what a lookup may be, in errors
	bundled []string // struct methods refused besides the lookup (bundle methods)
	// answer checks the lookup's type (without receiver) against the
	// input's key type and returns the answer's type A.
	answer func(ft, keyT reflect.Type, what string) (reflect.Type, error)
	batch  bool
}

var (
	SingleLookup = LookupForm{method: "Lookup", shape: lookupShape, answer: func(ft, keyT reflect.Type, what string) (reflect.Type, error) {
		shape, err := analyzeLookup(ft, keyT, what)
		return shape.out.value, err
	}}
	BatchLookup = LookupForm{method: "LookupBatch", shape: lookupBatchShape, bundled: []string{"StartBundle", "FinishBundle"},
		answer: analyzeLookupBatch, batch: true}
)

// InspectEnrich checks the lookup (of form) against the input's key type
// and the join against the input's value type and the lookup's answer, and
// returns the spec shipped to workers and the join's output type.
func InspectEnrich(lookup, join any, keyT, valT reflect.Type, form LookupForm) (Spec, reflect.Type, error) {
	if lookup == nil {
		return Spec{}, nil, fmt.Errorf("lookup is nil: pass %s", form.shape)
	}
	var spec Spec
	var answerT reflect.Type
	v := reflect.ValueOf(lookup)
	switch {
	case v.Kind() == reflect.Func:
		a, err := form.answer(v.Type(), keyT, "lookup")
		if err != nil {
			return Spec{}, nil, err
		}
		encoded, err := EncodeFunc("lookup", lookup)
		if err != nil {
			return Spec{}, nil, err
		}
		spec, answerT = Spec{Func: encoded}, a
	case v.Kind() == reflect.Ptr && v.Type().Elem().Kind() == reflect.Struct:
		t, err := RegisteredStruct("lookup", v)
		if err != nil {
			return Spec{}, nil, err
		}
		m, ok := v.Type().MethodByName(form.method)
		if !ok {
			return Spec{}, nil, fmt.Errorf("lookup %v has no %s method; want %s", v.Type(), form.method, form.shape)
		}
		if answerT, err = form.answer(methodType(m), keyT, fmt.Sprintf("%v.%s", v.Type(), form.method)); err != nil {
			return Spec{}, nil, err
		}
		for _, name := range form.bundled {
			if _, ok := v.Type().MethodByName(name); ok {
				return Spec{}, nil, fmt.Errorf("lookup %v has %s: a batch lookup may have Setup and Teardown, not bundle methods (a request is not a bundle)", v.Type(), name)
			}
		}
		for _, name := range lifecycle {
			if m, ok := v.Type().MethodByName(name); ok {
				if err := checkLifecycle(name, methodType(m), nil); err != nil {
					return Spec{}, nil, fmt.Errorf("lookup %v: %w", v.Type(), err)
				}
			}
		}
		if spec, err = structSpec(lookup, t); err != nil {
			return Spec{}, nil, err
		}
	default:
		return Spec{}, nil, fmt.Errorf("lookup is a %v: want %s", v.Type(), form.shape)
	}
	joinFn, outT, err := inspectJoin(join, valT, answerT)
	if err != nil {
		return Spec{}, nil, err
	}
	spec.Batch = form.batch
	spec.Enrich = &EnrichSpec{Join: joinFn, Answer: beam.EncodedType{T: answerT}}
	return spec, outT, nil
}

// analyzeLookup reads a lookup's type (without receiver): the shape of a
// wrapped fn that takes the key only and returns one output, the answer.
// With keyT not nil it checks the key parameter against it; a worker passes
// nil.
func analyzeLookup(ft reflect.Type, keyT reflect.Type, what string) (ProcShape, error) {
	bad := func(format string, args ...any) (ProcShape, error) {
		return ProcShape{}, fmt.Errorf("%s has signature %v: %s; want %s with LK=%v", what, ft, fmt.Sprintf(format, args...), lookupShape, keyT)
	}
	var s ProcShape
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
func inspectJoin(join any, valT, answerT reflect.Type) (*Shipped, reflect.Type, error) {
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
	encoded, err := EncodeFunc("join", join)
	if err != nil {
		return nil, nil, err
	}
	return encoded, ft.Out(0), nil
}

// JoinAnswer merges the answer into record; an error or a panic of the join
// is a Permanent error: the lookup succeeded, and calling it again would
// give the same answer.
func (e *EnrichSpec) JoinAnswer(record any, outs []any) (out []any, err error) {
	if len(outs) != 1 {
		return nil, PermanentOf(fmt.Errorf("async: the lookup gave %d answers; want 1", len(outs)))
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, PermanentOf(fmt.Errorf("join %s panicked: %v\n%s", e.Join.fn.Name(), r, debug.Stack()))
		}
	}()
	ft := e.Join.fn.Type()
	res := e.Join.fn.Call([]any{valueOf(record, ft.In(0)).Interface(), valueOf(outs[0], ft.In(1)).Interface()})
	if len(res) == 2 {
		if err, _ := res[1].(error); err != nil {
			return nil, PermanentOf(fmt.Errorf("join: %w", err))
		}
	}
	return []any{res[0]}, nil
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

// lookupShape and joinShape are quoted by every error about the lookup's or
// the join's signature.
const (
	lookupShape = "a registered top-level function ([ctx context.Context,] key LK) (A [, error]), " +
		"or a pointer to a registered struct with a method Lookup([ctx context.Context,] key LK) (A [, error]) (and optional Setup, Teardown)"
	joinShape = "a registered top-level function (record R, answer A) O or (record R, answer A) (O, error)"
)

// lookupBatchShape is quoted by every error about a batch lookup's
// signature.
const lookupBatchShape = "a registered top-level function ([ctx context.Context,] keys []LK) ([]A | ([]A, error) | ([]A, []error, error)), " +
	"or a pointer to a registered struct with a method LookupBatch of that form (and optional Setup, Teardown)"

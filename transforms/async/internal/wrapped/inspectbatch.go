package wrapped

// BatchParDo's fn at pipeline construction: its ProcessBatch and its
// optional methods, checked against the input's key and value types.

import (
	"fmt"
	"reflect"
)

// expectedBatchShape is quoted by every error about a batch fn's signature.
const expectedBatchShape = "ProcessBatch([ctx context.Context,] keys []K, values []V, emit func(i int, out O) | emit func(i int, k K2, v V2)) [error | ([]error, error)]"

// InspectBatch is Inspect for BatchParDo's fn.
func InspectBatch(fn any, keyT, valT reflect.Type) (Spec, reflect.Type, error) {
	return inspectForm(fn, fnForm{
		accepts:     "a pointer to a registered struct with a method " + expectedBatchShape + ", or a registered function of that form",
		what:        "batch fn",
		checkFunc:   func(ft reflect.Type) (outputShape, error) { return checkBatch(ft, keyT, valT, "fn") },
		checkStruct: func(pt reflect.Type) (outputShape, error) { return checkBatchStruct(pt, keyT, valT) },
		batch:       true,
	})
}

// checkBatchStruct checks a batch DoFn struct: ProcessBatch, Setup and
// Teardown, Revert; not StartBundle or FinishBundle (a request has no
// bundle of its own to start or finish).
func checkBatchStruct(pt reflect.Type, keyT, valT reflect.Type) (outputShape, error) {
	m, ok := pt.MethodByName("ProcessBatch")
	if !ok {
		if _, ok := pt.MethodByName("ProcessElement"); ok {
			return outputShape{}, fmt.Errorf("fn %v has ProcessElement but no ProcessBatch: use async.ParDo for it, or give it %s", pt, expectedBatchShape)
		}
		return outputShape{}, fmt.Errorf("fn %v has no ProcessBatch method; want %s", pt, expectedBatchShape)
	}
	out, err := checkBatch(methodType(m), keyT, valT, fmt.Sprintf("%v.ProcessBatch", pt))
	if err != nil {
		return outputShape{}, err
	}
	for _, name := range []string{"StartBundle", "FinishBundle"} {
		if _, ok := pt.MethodByName(name); ok {
			return outputShape{}, fmt.Errorf("fn %v has %s: a batch fn may have Setup and Teardown, not bundle methods (a request is not a bundle); move its work to Setup or ProcessBatch", pt, name)
		}
	}
	for _, name := range []string{"Setup", "Teardown"} {
		if m, ok := pt.MethodByName(name); ok {
			if err := checkLifecycle(name, methodType(m), nil); err != nil {
				return outputShape{}, fmt.Errorf("fn %v: %w", pt, err)
			}
		}
	}
	if m, ok := pt.MethodByName("Revert"); ok {
		if err := checkRevert(methodType(m), keyT, valT); err != nil {
			return outputShape{}, fmt.Errorf("fn %v: %w", pt, err)
		}
	}
	return out, nil
}

// checkBatch checks a ProcessBatch signature (without receiver) and returns
// what it outputs.
func checkBatch(ft reflect.Type, keyT, valT reflect.Type, what string) (outputShape, error) {
	bad := func(format string, args ...any) (outputShape, error) {
		return outputShape{}, fmt.Errorf("%s has signature %v: %s; want %s with K=%v, V=%v", what, ft, fmt.Sprintf(format, args...), expectedBatchShape, keyT, valT)
	}
	if ft.Kind() != reflect.Func {
		return bad("it is not a function")
	}
	in := paramsAfterContext(ft)
	if len(in) != 3 {
		return bad("it takes %d parameters after the optional context, want 3", len(in))
	}
	if in[0].Kind() != reflect.Slice || !keyT.AssignableTo(in[0].Elem()) {
		return bad("the keys parameter is %v but the input's keys are %v", in[0], keyT)
	}
	if in[1].Kind() != reflect.Slice || !valT.AssignableTo(in[1].Elem()) {
		return bad("the values parameter is %v but the input's values are %v", in[1], valT)
	}
	e := in[2]
	if e.Kind() != reflect.Func || e.NumIn() < 2 || e.NumIn() > 3 || e.NumOut() != 0 || e.IsVariadic() || e.In(0).Kind() != reflect.Int {
		return bad("the last parameter %v is not an emitter func(i int, out O) or func(i int, k K2, v V2)", e)
	}
	switch {
	case ft.NumOut() == 0, ft.NumOut() == 1 && ft.Out(0) == errorType,
		ft.NumOut() == 2 && ft.Out(0) == errorsType && ft.Out(1) == errorType:
	default:
		return bad("it returns %d values; want nothing, an error, or ([]error, error)", ft.NumOut())
	}
	if e.NumIn() == 3 {
		return outputShape{key: e.In(1), value: e.In(2)}, nil
	}
	return outputShape{value: e.In(1)}, nil
}

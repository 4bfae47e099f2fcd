package wrapped

// The wrapped fn at pipeline construction: a registered function or a
// pointer to a registered struct, checked against its form and described as
// a Spec that ships to workers. Here: what every form shares, and
// async.ParDo's form (Inspect); BatchParDo's is in inspectbatch.go, Enrich's
// in enrich.go.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
)

// Inspect checks fn against the input's key and value types and returns the
// spec that will be shipped to workers and the output type.
func Inspect(fn any, keyT, valT reflect.Type) (Spec, reflect.Type, error) {
	return inspectForm(fn, fnForm{
		accepts: "a pointer to a registered DoFn struct or a registered function of the form " + expectedShape,
		what:    "fn",
		checkFunc: func(ft reflect.Type) (outputShape, error) {
			shape, err := analyzeProcess(ft, keyT, valT, "fn")
			return shape.out, err
		},
		checkStruct: func(pt reflect.Type) (outputShape, error) {
			shape, err := checkStruct(pt, keyT, valT)
			return shape.out, err
		},
	})
}

func checkStruct(pt reflect.Type, keyT, valT reflect.Type) (ProcShape, error) {
	m, ok := pt.MethodByName("ProcessElement")
	if !ok {
		if _, ok := pt.MethodByName("ProcessBatch"); ok {
			return ProcShape{}, fmt.Errorf("fn %v has ProcessBatch but no ProcessElement: use async.BatchParDo for it", pt)
		}
		return ProcShape{}, fmt.Errorf("fn %v has no ProcessElement method; want %s", pt, expectedShape)
	}
	shape, err := analyzeProcess(methodType(m), keyT, valT, fmt.Sprintf("%v.ProcessElement", pt))
	if err != nil {
		return ProcShape{}, err
	}
	for _, name := range lifecycle {
		m, ok := pt.MethodByName(name)
		if !ok {
			continue
		}
		if err := checkLifecycle(name, methodType(m), shape.emitT); err != nil {
			return ProcShape{}, fmt.Errorf("fn %v: %w", pt, err)
		}
	}
	if m, ok := pt.MethodByName("Revert"); ok {
		if err := checkRevert(methodType(m), keyT, valT); err != nil {
			return ProcShape{}, fmt.Errorf("fn %v: %w", pt, err)
		}
	}
	return shape, nil
}

// fnForm is one form of wrapped fn (async.ParDo's, BatchParDo's): what
// inspectForm checks a function or a struct pointer against.
type fnForm struct {
	accepts string // what a fn may be, in errors
	what    string // the fn, as RegisteredStruct names it
	// checkFunc and checkStruct check a function's type, or a struct
	// pointer's type, and return what it outputs.
	checkFunc, checkStruct func(reflect.Type) (outputShape, error)
	batch                  bool
}

// inspectForm checks fn, a registered function or a pointer to a registered
// struct, against form, and returns the spec that will be shipped to
// workers and the type of the outputs the transform's DoFns emit: O, or
// the pair type (SetPairOutput) for key-value pairs (spec.Pairs).
func inspectForm(fn any, form fnForm) (Spec, reflect.Type, error) {
	spec, out, err := inspectShape(fn, form)
	if err != nil {
		return Spec{}, nil, err
	}
	if !out.pairs() {
		return spec, out.value, nil
	}
	spec.Pairs = &PairTypes{Key: beam.EncodedType{T: out.key}, Value: beam.EncodedType{T: out.value}}
	return spec, pairType, nil
}

// inspectShape is inspectForm before the outputs' type is decided.
func inspectShape(fn any, form fnForm) (Spec, outputShape, error) {
	if fn == nil {
		return Spec{}, outputShape{}, fmt.Errorf("fn is nil: pass %s", form.accepts)
	}
	v := reflect.ValueOf(fn)
	switch {
	case v.Kind() == reflect.Func:
		out, err := form.checkFunc(v.Type())
		if err != nil {
			return Spec{}, outputShape{}, err
		}
		encoded, err := EncodeFunc("fn", fn)
		if err != nil {
			return Spec{}, outputShape{}, err
		}
		return Spec{Func: encoded, Batch: form.batch}, out, nil
	case v.Kind() == reflect.Ptr && v.Type().Elem().Kind() == reflect.Struct:
		t, err := RegisteredStruct(form.what, v)
		if err != nil {
			return Spec{}, outputShape{}, err
		}
		out, err := form.checkStruct(v.Type())
		if err != nil {
			return Spec{}, outputShape{}, err
		}
		spec, err := structSpec(fn, t)
		spec.Batch = form.batch
		return spec, out, err
	case v.Kind() == reflect.Struct:
		return Spec{}, outputShape{}, fmt.Errorf("fn is a %v value: pass a pointer (&%v{...}) so that its methods are found", v.Type(), v.Type().Name())
	default:
		return Spec{}, outputShape{}, fmt.Errorf("fn is a %v: want %s", v.Type(), form.accepts)
	}
}

// structSpec is the spec of a DoFn struct fn of type t: its type and the
// JSON of its exported fields.
func structSpec(fn any, t reflect.Type) (Spec, error) {
	body, err := json.Marshal(fn)
	if err != nil {
		return Spec{}, fmt.Errorf("fn %v cannot be serialised as JSON of its exported fields: %w", t, err)
	}
	return Spec{Type: &beam.EncodedType{T: t}, JSON: string(body)}, nil
}

// RegisteredStruct checks that v, given as what, is a non-nil pointer to a
// named struct type registered with Beam (so that a worker can rebuild it),
// and returns the struct type.
func RegisteredStruct(what string, v reflect.Value) (reflect.Type, error) {
	if v.Kind() != reflect.Ptr || v.Type().Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is a %v: want a pointer to a registered named struct type", what, v.Type())
	}
	if v.IsNil() {
		return nil, fmt.Errorf("%s is a nil %v: pass a pointer to a value", what, v.Type())
	}
	t := v.Type().Elem()
	if key, ok := runtime.TypeKey(t); !ok {
		return nil, fmt.Errorf("%s type %v is unnamed: declare a named struct type and register it", what, t)
	} else if _, ok := runtime.LookupType(key); !ok {
		if what == "fn" {
			return nil, fmt.Errorf("fn type %v is not registered: add %s to an init() function of package %s", t, strings.Join(DoFnLines(t), " and "), t.PkgPath())
		}
		return nil, fmt.Errorf("%s type %v is not registered: call beam.RegisterType(reflect.TypeOf((*%s)(nil)).Elem()) in an init() function, before beam.Init", what, t, t.Name())
	}
	return t, nil
}

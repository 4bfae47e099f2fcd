package wrapped

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
)

// The wrapped fn at pipeline construction: its forms and shapes, checked
// and described as a Spec that ships to workers.

// paramsAfterContext returns the parameter types of a func type, without
// a leading context.Context.
func paramsAfterContext(ft reflect.Type) []reflect.Type {
	in := make([]reflect.Type, 0, ft.NumIn())
	for i := 0; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	if len(in) > 0 && in[0] == contextType {
		in = in[1:]
	}
	return in
}

// Spec is the serialisable description of the wrapped fn: either a
// registered DoFn struct (its type and the JSON of its exported fields) or a
// registered function.
type Spec struct {
	Type *beam.EncodedType `json:",omitempty"`
	JSON string            `json:",omitempty"`
	Func *Shipped          `json:",omitempty"`
	// Batch: the fn is BatchParDo's, with ProcessBatch (batchfn.go).
	Batch bool `json:",omitempty"`
	// Pairs: the fn outputs key-value pairs of these types (shape.go).
	Pairs *PairTypes `json:",omitempty"`
	// Enrich: the fn is Enrich's lookup, called with the key only (a
	// struct's Lookup method), and answers are joined into records
	// (enrichspec.go).
	Enrich *EnrichSpec `json:",omitempty"`
}

// Method is the name of the struct method that is the wrapped fn's call.
func (s Spec) Method() string {
	if s.Enrich != nil {
		return "Lookup"
	}
	return "ProcessElement"
}

// BatchMethod is the name of the struct method that is a batch fn's call.
func (s Spec) BatchMethod() string {
	if s.Enrich != nil {
		return "LookupBatch"
	}
	return "ProcessBatch"
}

// HasRevert reports whether the wrapped fn is a DoFn struct with a Revert
// method.
func (s Spec) HasRevert() bool {
	if s.Type == nil || s.Enrich != nil {
		return false
	}
	_, ok := reflect.PointerTo(s.Type.T).MethodByName("Revert")
	return ok
}

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

func checkReturnsOnlyError(ft reflect.Type) error {
	switch {
	case ft.NumOut() == 0:
		return nil
	case ft.NumOut() == 1 && ft.Out(0) == errorType:
		return nil
	}
	return fmt.Errorf("it returns %d values; want nothing or a single error", ft.NumOut())
}

// lifecycle lists the optional methods forwarded to the wrapped DoFn.
var lifecycle = []string{"Setup", "StartBundle", "FinishBundle", "Teardown"}

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

// methodType drops the receiver from a method's func type.
func methodType(m reflect.Method) reflect.Type {
	ft := m.Type
	in := make([]reflect.Type, 0, ft.NumIn()-1)
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	out := make([]reflect.Type, 0, ft.NumOut())
	for i := 0; i < ft.NumOut(); i++ {
		out = append(out, ft.Out(i))
	}
	return reflect.FuncOf(in, out, false)
}

// checkLifecycle checks an optional method; emitT is ProcessElement's
// emitter, which StartBundle and FinishBundle may take too (nil: none).
func checkLifecycle(name string, ft reflect.Type, emitT reflect.Type) error {
	want := name + "([ctx context.Context]) [error]"
	if (name == "StartBundle" || name == "FinishBundle") && emitT != nil {
		want = fmt.Sprintf("%s([ctx context.Context,] [emit %v]) [error]", name, emitT)
	}
	i := 0
	if i < ft.NumIn() && ft.In(i) == contextType {
		i++
	}
	if i < ft.NumIn() && emitT != nil && ft.In(i) == emitT && (name == "StartBundle" || name == "FinishBundle") {
		i++
	}
	if i != ft.NumIn() || checkReturnsOnlyError(ft) != nil {
		return fmt.Errorf("%s has signature %v; want %s", name, ft, want)
	}
	return nil
}

// revertShape is quoted by errors about the compensation method.
const revertShape = "Revert([ctx context.Context,] key K, value V, err error) [error]"

// checkRevert checks the optional compensation method of a DoFn struct.
func checkRevert(ft reflect.Type, keyT, valT reflect.Type) error {
	in := paramsAfterContext(ft)
	if len(in) != 3 || !keyT.AssignableTo(in[0]) || !valT.AssignableTo(in[1]) || in[2] != errorType || checkReturnsOnlyError(ft) != nil {
		return fmt.Errorf("Revert has signature %v; want %s with K=%v, V=%v", ft, revertShape, keyT, valT)
	}
	return nil
}

package wrapped

// Shipping the user's registered top-level functions (the wrapped fn, a
// lookup, a join, WithRetryIf, WithIDFn, WithPriority) to workers by name.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
)

// Shipped is a registered top-level function, serialised as its name
// and its type and resolved on the worker through Beam's function registry
// (runtime.ResolveFunction: registered functions, else the binary's symbol
// table).
//
// Why not beam.EncodedFunc: Beam encodes a function by reading it as a
// DoFn's method (funcx.New), which refuses parameter and result types a
// plain function may well have: an error parameter (WithRetryIf's
// func(error) bool) or a []error result (LookupBatch). Graph construction
// then fails far from the option that took the function. A function's name
// and type are all a worker of the same binary needs.
type Shipped struct {
	fn reflectx.Func
}

// Ship wraps fn, which the caller has checked to be a registered
// top-level function, and ships it here as a worker will read it, so that
// a type Beam cannot encode (an interface parameter: func(any) string)
// fails when the pipeline is built, not when it is translated.
func Ship(fn any) (*Shipped, error) {
	shipped := &Shipped{fn: reflectx.MakeFunc(fn)}
	buf, err := json.Marshal(shipped)
	if err == nil {
		err = json.Unmarshal(buf, new(Shipped))
	}
	if err != nil {
		return nil, err
	}
	return shipped, nil
}

// shippedFuncJSON is Shipped's serialised form.
type shippedFuncJSON struct {
	Name string
	Type *beam.EncodedType
}

// MarshalJSON writes the function's name and type.
func (f Shipped) MarshalJSON() ([]byte, error) {
	return json.Marshal(shippedFuncJSON{Name: f.fn.Name(), Type: &beam.EncodedType{T: f.fn.Type()}})
}

// UnmarshalJSON resolves the function by name, as Beam resolves a DoFn's
// functions on a worker.
func (f *Shipped) UnmarshalJSON(buf []byte) error {
	var s shippedFuncJSON
	if err := json.Unmarshal(buf, &s); err != nil {
		return err
	}
	if s.Name == "" || s.Type == nil || s.Type.T == nil || s.Type.T.Kind() != reflect.Func {
		return fmt.Errorf("async: a shipped function needs a name and a function type, got %q", s.Name)
	}
	fn, err := runtime.ResolveFunction(s.Name, s.Type.T)
	if err != nil {
		return fmt.Errorf("async: cannot find function %s on this worker (register it with the beam/register package in an init function): %w", s.Name, err)
	}
	if got := reflect.TypeOf(fn); !sameEncoding(got, s.Type.T) {
		return fmt.Errorf("async: function %s has type %v on this worker, the pipeline was built with %v", s.Name, got, s.Type.T)
	}
	f.fn = reflectx.MakeFunc(fn)
	return nil
}

// sameEncoding reports whether two types encode alike. A decoded type is
// only the same up to its encoding: Beam keeps a named type's name only if
// the type is registered (beam.RegisterType) and otherwise decodes its
// structure (type SKU string comes back as string), while a registered
// function resolves to its own, named, type.
func sameEncoding(a, b reflect.Type) bool {
	ja, errA := json.Marshal(&beam.EncodedType{T: a})
	jb, errB := json.Marshal(&beam.EncodedType{T: b})
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// closureName matches the symbol name of a closure or function literal.
var closureName = regexp.MustCompile(`\.func\d+(\.\d+)*$`)

// EncodeFunc checks that fn (already type-checked) is a registered
// top-level function, which is what a worker can find by name.
func EncodeFunc(option string, fn any) (*Shipped, error) {
	if reflect.ValueOf(fn).IsNil() {
		return nil, fmt.Errorf("%s: fn is a nil function", option)
	}
	name := reflectx.FunctionName(fn)
	if closureName.MatchString(name) {
		return nil, fmt.Errorf("%s: %s is a closure or function literal; declare it as a top-level function", option, name)
	}
	if err := CheckRegistered(option, fn); err != nil {
		return nil, err
	}
	shipped, err := Ship(fn)
	if err != nil {
		return nil, fmt.Errorf("%s: function %s cannot be shipped to workers: %v", option, name, err)
	}
	return shipped, nil
}

// Func is the shipped function.
func (f *Shipped) Func() reflectx.Func { return f.fn }

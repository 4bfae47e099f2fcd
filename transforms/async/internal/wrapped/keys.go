package wrapped

// Which key types can key the transform's state: those whose encoding is
// deterministic, so that equal keys always reach the same state.

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
)

// CheckKeyType returns why values of t cannot key the transform's state, or
// nil. State and timers are kept per encoded key, so equal keys must encode
// to equal bytes: integers of every size, strings, bools and []byte do;
// arrays, slices and structs of those do too (a struct must export all its
// fields: the coder leaves unexported ones out, and keys that differ only
// there would be one key). Beam Go's Coder.IsDeterministic says no to some of
// these (int, int32, uint64, structs), though their encodings are fixed;
// GroupByKey accepts them all. A type with a coder registered for it
// (beam.RegisterCoder) is taken at its word.
func CheckKeyType(t reflect.Type) error {
	if why := nondeterministic(t, map[reflect.Type]bool{}); why != "" {
		return fmt.Errorf("the key type %v cannot key state: %s; state and timers are kept per encoded key, so equal keys must encode to equal bytes. "+
			"Key by an integer, a string, []byte, a bool, or an array or struct (all fields exported) of those, for example with fmt.Sprint of the key, "+
			"or register a deterministic coder for %v with beam.RegisterCoder", t, why, t)
	}
	return nil
}

// nondeterministic says why t's encoding may differ for equal values, or "".
func nondeterministic(t reflect.Type, seen map[reflect.Type]bool) string {
	if coder.LookupCustomCoder(t) != nil || seen[t] {
		return ""
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return ""
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return fmt.Sprintf("%v is a floating-point type (-0 and +0 are equal but encode apart, NaN is not equal to itself)", t)
	case reflect.Array, reflect.Slice:
		if why := nondeterministic(t.Elem(), seen); why != "" {
			return fmt.Sprintf("its elements: %s", why)
		}
		return ""
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				return fmt.Sprintf("field %s of %v is not exported (the coder leaves it out)", f.Name, t)
			}
			if why := nondeterministic(f.Type, seen); why != "" {
				return fmt.Sprintf("field %s: %s", f.Name, why)
			}
		}
		return ""
	case reflect.Map:
		return fmt.Sprintf("%v is a map (its entries encode in no fixed order)", t)
	case reflect.Interface:
		return fmt.Sprintf("%v is an interface (its encoding depends on the value's dynamic type)", t)
	case reflect.Pointer:
		return fmt.Sprintf("%v is a pointer (key by the value it points to)", t)
	}
	return fmt.Sprintf("%v is a %v", t, t.Kind())
}

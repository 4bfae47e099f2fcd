package wrapped

// Type names as users write them. The public data types (Failure, Event,
// ...) are declared in internal/terms and re-declared by the front as
// aliases, so reflection names them terms.X; users import them as async.X,
// and cache keys written before they moved name the front's path.

import (
	"reflect"
	"strings"
)

const (
	termsPath = "github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	frontPath = "github.com/asyncbeam/asyncbeam/transforms/async"
)

// PkgPath is the path of the package users import t from.
func PkgPath(t reflect.Type) string {
	if p := t.PkgPath(); p != termsPath {
		return p
	}
	return frontPath
}

// TypeName is t.String() with the public data types named as users write
// them: async.Failure, not terms.Failure.
func TypeName(t reflect.Type) string {
	s := t.String()
	if !mentionsTerms(t, 0) {
		return s
	}
	return strings.ReplaceAll(s, "terms.", "async.")
}

// mentionsTerms reports whether t is, or is built from, a type of
// internal/terms (depth cuts recursive types).
func mentionsTerms(t reflect.Type, depth int) bool {
	if t == nil || depth > 8 {
		return false
	}
	if t.Name() != "" {
		return t.PkgPath() == termsPath
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
		return mentionsTerms(t.Elem(), depth+1)
	case reflect.Map:
		return mentionsTerms(t.Key(), depth+1) || mentionsTerms(t.Elem(), depth+1)
	case reflect.Func:
		for i := 0; i < t.NumIn(); i++ {
			if mentionsTerms(t.In(i), depth+1) {
				return true
			}
		}
		for i := 0; i < t.NumOut(); i++ {
			if mentionsTerms(t.Out(i), depth+1) {
				return true
			}
		}
	}
	return false
}

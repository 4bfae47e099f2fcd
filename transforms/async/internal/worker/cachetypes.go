package worker

// The shape of what a result cache holds, as part of every cache key: an
// entry written by a build of the transform whose outputs (or answers, or
// output pairs) had other types is a miss, never an entry decoded into the
// wrong type. Redis outlives builds: a job redeployed with a field added to
// its answer struct, under the same Prefix, would otherwise read entries
// its coder decodes into wrong values, or fails to decode in a later step.

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// CachedShape describes the cached types: the answer's (Enrich), or the
// outputs' and, for pairs, K2's and V2's.
func (f *Core) CachedShape() []byte {
	var b strings.Builder
	DescribeType(&b, f.cachedType(), map[reflect.Type]bool{})
	if p := f.User.Pairs; p != nil && f.User.Enrich == nil {
		b.WriteString("|")
		DescribeType(&b, p.Key.T, map[reflect.Type]bool{})
		b.WriteString("|")
		DescribeType(&b, p.Value.T, map[reflect.Type]bool{})
	}
	return []byte(b.String())
}

// cachedType is the type of what the cache holds: Enrich's answers, else
// the outputs.
func (f *Core) cachedType() reflect.Type {
	if f.User.Enrich != nil {
		return f.User.Enrich.Answer.T
	}
	return f.OutputType.T
}

// DescribeType writes t with every struct's exported fields, their names,
// types and tags, recursively (seen, the named types met, cuts cycles):
// what a coder of t depends on.
func DescribeType(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	if t == nil {
		b.WriteString("nil")
		return
	}
	if t.Name() != "" {
		fmt.Fprintf(b, "%s.%s", wrapped.PkgPath(t), t.Name())
		if seen[t] {
			return // a cycle goes through a named type: cut it there
		}
		seen[t] = true
	}
	switch t.Kind() {
	case reflect.Struct:
		b.WriteString("{")
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			fmt.Fprintf(b, "%s %q:", sf.Name, sf.Tag)
			DescribeType(b, sf.Type, seen)
			b.WriteString(";")
		}
		b.WriteString("}")
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
		fmt.Fprintf(b, "%v(", t.Kind())
		if t.Kind() == reflect.Array {
			fmt.Fprintf(b, "%d,", t.Len())
		}
		DescribeType(b, t.Elem(), seen)
		b.WriteString(")")
	case reflect.Map:
		b.WriteString("map(")
		DescribeType(b, t.Key(), seen)
		b.WriteString(",")
		DescribeType(b, t.Elem(), seen)
		b.WriteString(")")
	default:
		if t.Name() == "" {
			b.WriteString(t.String())
		} else {
			fmt.Fprintf(b, "(%v)", t.Kind())
		}
	}
}

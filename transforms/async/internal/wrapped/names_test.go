package wrapped

import (
	"reflect"
	"testing"
)

// local is a named type outside internal/terms: its name is kept.
type local struct{}

func TestTypeNames(t *testing.T) {
	own := reflect.TypeOf(local{})
	for _, c := range []struct {
		name string
		t    reflect.Type
		want string
	}{
		{"builtin", reflect.TypeOf(0), "int"},
		{"a named type elsewhere", own, "wrapped.local"},
		{"a slice of it", reflect.TypeOf([]local{}), "[]wrapped.local"},
		{"a func of it", reflect.TypeOf(func(*local) error { return nil }), "func(*wrapped.local) error"},
	} {
		if got := TypeName(c.t); got != c.want {
			t.Errorf("%s: TypeName = %q, want %q", c.name, got, c.want)
		}
	}
	if got, want := PkgPath(own), "github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"; got != want {
		t.Errorf("PkgPath = %q, want %q", got, want)
	}
}

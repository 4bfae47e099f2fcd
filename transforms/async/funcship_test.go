package async

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// splitErrs is a function with a []error result, which Beam's function
// encoding refuses.
func splitErrs(keys []int) ([]string, []error, error) {
	return make([]string, len(keys)), make([]error, len(keys)), nil
}

// shelfCode is a named type that is not registered: Beam's type encoding keeps
// its structure (string), not its name.
type shelfCode string

// skuText takes a named, unregistered type.
func skuText(s shelfCode) string { return "shelfCode " + string(s) }

// shelfItem is a struct that is not registered either.
type shelfItem struct{ SKU shelfCode }

// itemSKUs takes a list of unregistered structs; register.FunctionNxM
// registers struct types of the signature only, not those inside a list.
func itemSKUs(items []shelfItem) []shelfCode {
	out := make([]shelfCode, len(items))
	for i, it := range items {
		out[i] = it.SKU
	}
	return out
}

// anyText takes an interface, which Beam's type encoding refuses.
func anyText(v any) string { return fmt.Sprint(v) }

func init() {
	register.Function1x3(splitErrs)
	register.Function1x1(skuText)
	register.Function1x1(itemSKUs)
	register.Function1x1(anyText)
}

// TestShippedFuncRoundTrip: registered functions of types Beam's own
// function encoding refuses travel by name and come back callable.
func TestShippedFuncRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		fn   any
		args []any
		want any // first result
	}{
		{"error parameter", notTimeout, []any{errors.New("call timed out")}, false},
		{"[]error result", splitErrs, []any{[]int{1, 2}}, []string{"", ""}},
		{"named unregistered parameter", skuText, []any{shelfCode("a1")}, "shelfCode a1"},
		{"unregistered structs in a list", itemSKUs, []any{[]shelfItem{{"a1"}, {"b2"}}}, []shelfCode{"a1", "b2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shipped, err := wrapped.Ship(tt.fn)
			if err != nil {
				t.Fatalf("ship: %v", err)
			}
			buf, err := json.Marshal(shipped)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			var got wrapped.Shipped
			if err := json.Unmarshal(buf, &got); err != nil {
				t.Fatalf("unmarshal %s: %v", buf, err)
			}
			res := got.Func().Call(tt.args)
			if g, w := fmtAny(res[0]), fmtAny(tt.want); g != w {
				t.Errorf("call gave %s; want %s", g, w)
			}
		})
	}
}

// TestShippedFuncErrors: what a worker cannot resolve fails with the name
// and what to do.
func TestShippedFuncErrors(t *testing.T) {
	shipped, err := wrapped.Ship(notTimeout)
	if err != nil {
		t.Fatal(err)
	}
	good, err := json.Marshal(shipped)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		json string
		want string
	}{
		{"unknown name", strings.Replace(string(good), "notTimeout", "noSuchFunction", 1), "cannot find function github.com/asyncbeam/asyncbeam/transforms/async.noSuchFunction on this worker"},
		{"no name", `{"Name":""}`, "needs a name and a function type"},
		{"not JSON", `[1]`, "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f wrapped.Shipped
			err := json.Unmarshal([]byte(tt.json), &f)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestEncodeFuncRefusesWhatCannotShip: a function Beam cannot encode fails
// at its option, with the option's name.
func TestEncodeFuncRefusesWhatCannotShip(t *testing.T) {
	_, err := wrapped.EncodeFunc("WithIDFn", anyText)
	want := "WithIDFn: function github.com/asyncbeam/asyncbeam/transforms/async.anyText cannot be shipped to workers"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v; want an error containing %q", err, want)
	}
	if _, err := wrapped.EncodeFunc("WithIDFn", skuText); err != nil {
		t.Errorf("a registered function of a named type: got %v; want no error", err)
	}
}

func fmtAny(v any) string {
	buf, _ := json.Marshal(v)
	return string(buf)
}

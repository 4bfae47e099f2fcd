package async

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// lineItem is a struct value as an input might carry.
type lineItem struct {
	SKU  string
	Qty  int
	Tags []string
}

// sku is a named string type.
type sku string

func init() {
	beam.RegisterType(reflect.TypeOf(lineItem{}))
	beam.RegisterType(reflect.TypeOf(sku("")))
}

func TestFailureText(t *testing.T) {
	huge := strings.Repeat("é", 2000) // 4000 bytes, two per character
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"int", 152, "152"},
		{"string", "k001", "k001"},
		{"named string", sku("a<b"), "a<b"},
		{"struct", lineItem{SKU: "a<b", Qty: 4}, `{"SKU":"a<b","Qty":4,"Tags":null}`},
		{"pointer to struct", &lineItem{SKU: "x", Tags: []string{"t"}}, `{"SKU":"x","Qty":0,"Tags":["t"]}`},
		{"nil pointer to struct", (*lineItem)(nil), "null"},
		{"map, keys sorted", map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{"slice", []int{1, 2}, "[1,2]"},
		{"bytes", []byte("hi\x00"), `"hi\x00"`},
		{"no JSON form", struct{ F float64 }{math.NaN()}, "{NaN}"},
		{"pointer to int", new(int), "0x"}, // %v: an address
		{"huge", huge, huge[:1024] + "…[cut: 4000 bytes in all]"},
		{"huge, cut inside a character", "x" + huge, "x" + huge[:1022] + "…[cut: 4001 bytes in all]"},
	}
	for _, tc := range tests {
		got := terms.FailureText(tc.v)
		if tc.name == "pointer to int" {
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("%s: failureText = %q, want an address", tc.name, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s: failureText = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// record is a failure record of key k and value v as the transform makes
// it.
func record(t *testing.T, k, v any) Failure {
	t.Helper()
	kb, err := wrapped.Encode(beam.NewElementEncoder(reflect.TypeOf(k)), k)
	if err != nil {
		t.Fatalf("encoding key %v: %v", k, err)
	}
	vb, err := wrapped.Encode(beam.NewElementEncoder(reflect.TypeOf(v)), v)
	if err != nil {
		t.Fatalf("encoding value %v: %v", v, err)
	}
	return Failure{Key: kb, Value: vb, KeyText: terms.FailureText(k), ValueText: terms.FailureText(v)}
}

func TestDecodeFailure(t *testing.T) {
	item := lineItem{SKU: "sku-7", Qty: 3, Tags: []string{"a", "b"}}
	tests := []struct {
		name   string
		rec    Failure
		decode func(Failure) (k, v any, err error)
		wantK  any
		wantV  any
	}{
		{"string, int", record(t, "k001", 152),
			func(f Failure) (any, any, error) { return DecodeFailure[string, int](f) }, "k001", 152},
		{"int64, struct", record(t, int64(100013), item),
			func(f Failure) (any, any, error) { return DecodeFailure[int64, lineItem](f) }, int64(100013), item},
		{"named string, bytes", record(t, sku("s"), []byte{0, 1}),
			func(f Failure) (any, any, error) { return DecodeFailure[sku, []byte](f) }, sku("s"), []byte{0, 1}},
		{"empty string key, zero value", record(t, "", 0),
			func(f Failure) (any, any, error) { return DecodeFailure[string, int](f) }, "", 0},
		{"huge value, text cut", record(t, "k", strings.Repeat("v", 5000)),
			func(f Failure) (any, any, error) { return DecodeFailure[string, string](f) }, "k", strings.Repeat("v", 5000)},
		{"nil slice value (prints null, decodes empty)", record(t, "k", []string(nil)),
			func(f Failure) (any, any, error) { return DecodeFailure[string, []string](f) }, "k", []string{}},
		{"record built by hand, without texts", Failure{Key: record(t, "k", 1).Key, Value: record(t, "k", 1).Value},
			func(f Failure) (any, any, error) { return DecodeFailure[string, int](f) }, "k", 1},
	}
	for _, tc := range tests {
		k, v, err := tc.decode(tc.rec)
		if err != nil {
			t.Errorf("%s: DecodeFailure: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(k, tc.wantK) || !reflect.DeepEqual(v, tc.wantV) {
			t.Errorf("%s: DecodeFailure = %#v, %#v; want %#v, %#v", tc.name, k, v, tc.wantK, tc.wantV)
		}
	}
}

func TestDecodeFailureWrongTypes(t *testing.T) {
	item := lineItem{SKU: "sku-7", Qty: 3}
	tests := []struct {
		name   string
		rec    Failure
		decode func(Failure) error
		want   []string // in the error
	}{
		{"int key asked as string", record(t, 152, "v"),
			func(f Failure) error { _, _, err := DecodeFailure[string, string](f); return err },
			[]string{"DecodeFailure[string, string]", "key is not of type string", "decodes as int"}},
		{"zero int key asked as string", record(t, 0, "v"),
			func(f Failure) error { _, _, err := DecodeFailure[string, string](f); return err },
			[]string{"key is not of type string", `prints it as "0"`, "decodes as int"}},
		{"string value asked as int", record(t, "k", "hello"),
			func(f Failure) error { _, _, err := DecodeFailure[string, int](f); return err },
			[]string{"value is not of type int", "decodes as string"}},
		{"struct value asked as another struct", record(t, "k", item),
			func(f Failure) error {
				_, _, err := DecodeFailure[string, FailureError](f)
				return err
			},
			[]string{"DecodeFailure[string, async.FailureError]", "value is not of type async.FailureError"}},
		{"interface type", record(t, "k", 1),
			func(f Failure) error { _, _, err := DecodeFailure[any, int](f); return err },
			[]string{"key is not of type interface {}", "decodes as string"}},
		{"empty record", Failure{},
			func(f Failure) error { _, _, err := DecodeFailure[string, int](f); return err },
			[]string{"key is not of type string"}},
	}
	for _, tc := range tests {
		err := tc.decode(tc.rec)
		if err == nil {
			t.Errorf("%s: DecodeFailure = nil error, want one", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: DecodeFailure error %q, want it to contain %q", tc.name, err, w)
			}
		}
	}
}

package async

import (
	"reflect"
	"strings"
	"testing"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

type orderKey struct {
	Customer string
	Line     int32
}

type nestedKey struct {
	Order orderKey
	Parts [2]uint16
}

type hiddenKey struct {
	ID     int
	secret string
}

type floatKey struct{ Price float64 }

// TestCheckKeyType: every key type whose encoding is in fact deterministic
// is accepted; the others are refused with the reason and what to use.
func TestCheckKeyType(t *testing.T) {
	tests := []struct {
		key  any
		want string // "": accepted; else a part of the error
	}{
		{"s", ""}, {[]byte("b"), ""}, {true, ""},
		{int(1), ""}, {int8(1), ""}, {int16(1), ""}, {int32(1), ""}, {int64(1), ""},
		{uint(1), ""}, {uint8(1), ""}, {uint16(1), ""}, {uint32(1), ""}, {uint64(1), ""},
		{[3]int{}, ""}, {[]string{}, ""},
		{orderKey{}, ""}, {nestedKey{}, ""},
		{1.5, "floating-point"}, {float32(1), "floating-point"}, {complex(1, 1), "floating-point"},
		{floatKey{}, "field Price"},
		{map[string]int{}, "map"},
		{(*any)(nil), "pointer"},
		{&orderKey{}, "pointer"},
		{hiddenKey{}, "not exported"},
		{[]map[int]int{}, "its elements"},
	}
	for _, tc := range tests {
		kt := reflect.TypeOf(tc.key)
		err := wrapped.CheckKeyType(kt)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkKeyType(%v) = %v, want it accepted", kt, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Key by an integer")):
			t.Errorf("checkKeyType(%v) = %v, want an error naming %q and what to use", kt, err, tc.want)
		}
	}
	if err := wrapped.CheckKeyType(reflect.TypeOf((*any)(nil)).Elem()); err == nil || !strings.Contains(err.Error(), "interface") {
		t.Errorf("checkKeyType(any) = %v, want an error naming the interface", err)
	}
}

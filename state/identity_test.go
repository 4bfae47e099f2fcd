package state

import (
	"bytes"
	"testing"
)

// TestElementIDNamesElementsApart: every field of an ElementID tells two
// elements apart, in the struct and in its encoding; Base drops the
// incarnation only.
func TestElementIDNamesElementsApart(t *testing.T) {
	base := ElementID{Key: "k", Window: "[0, 10)", ID: "a", Nonce: 7, Seq: 3}
	for _, tc := range []struct {
		name  string
		other ElementID
	}{
		{"key", ElementID{Key: "k2", Window: "[0, 10)", ID: "a", Nonce: 7, Seq: 3}},
		{"window", ElementID{Key: "k", Window: "[10, 20)", ID: "a", Nonce: 7, Seq: 3}},
		{"global window", ElementID{Key: "k", ID: "a", Nonce: 7, Seq: 3}},
		{"id", ElementID{Key: "k", Window: "[0, 10)", ID: "b", Nonce: 7, Seq: 3}},
		{"nonce", ElementID{Key: "k", Window: "[0, 10)", ID: "a", Nonce: 8, Seq: 3}},
		{"seq", ElementID{Key: "k", Window: "[0, 10)", ID: "a", Nonce: 7, Seq: 4}},
		// Length prefixes keep a byte moved from one field to the next apart.
		{"shifted bytes", ElementID{Key: "k[", Window: "0, 10)", ID: "a", Nonce: 7, Seq: 3}},
		{"id into window", ElementID{Key: "k", Window: "[0, 10)a", Nonce: 7, Seq: 3}},
	} {
		if tc.other == base {
			t.Errorf("%s: %+v == %+v, want them apart", tc.name, tc.other, base)
		}
		if bytes.Equal(tc.other.Encode(), base.Encode()) {
			t.Errorf("%s: Encode(%+v) == Encode(%+v), want them apart", tc.name, tc.other, base)
		}
	}
	if got, want := base.Base(), (ElementID{Key: "k", Window: "[0, 10)", ID: "a"}); got != want {
		t.Errorf("Base() = %+v, want %+v", got, want)
	}
	moved := base
	moved.Nonce, moved.Seq = 1, 1
	if moved.Base() != base.Base() {
		t.Errorf("Base of %+v = %+v, want %+v (the same element in another incarnation)", moved, moved.Base(), base.Base())
	}
}

// TestOccurrence: two occurrences of one value are two elements, and the
// same occurrence is the same element.
func TestOccurrence(t *testing.T) {
	e := ElementID{Key: "k", ID: ValueID([]byte("v"))}
	if e.Occurrence(1) == e.Occurrence(2) {
		t.Errorf("Occurrence(1) == Occurrence(2) = %+v, want two elements", e.Occurrence(1))
	}
	if e.Occurrence(2) != e.Occurrence(2) {
		t.Error("Occurrence(2) differs from itself")
	}
	if e.Occurrence(1) == e {
		t.Errorf("Occurrence(1) = %+v, want an ID other than the value's", e.Occurrence(1))
	}
}

// TestValueID: deterministic, 16 bytes, and two values give two IDs.
func TestValueID(t *testing.T) {
	if ValueID([]byte("a")) != ValueID([]byte("a")) {
		t.Error("ValueID is not deterministic")
	}
	if ValueID([]byte("a")) == ValueID([]byte("b")) {
		t.Error("ValueID gives two different values the same ID")
	}
	if got := len(ValueID(nil)); got != 16 {
		t.Errorf("len(ValueID(nil)) = %d, want 16", got)
	}
}

// TestEnvelopeElement: an envelope names its element with every field it
// keeps.
func TestEnvelopeElement(t *testing.T) {
	env := Envelope{ID: "a", Window: "[0, 10)", Nonce: 5, Seq: 2, Value: []byte("v")}
	got, want := env.Element("k"), ElementID{Key: "k", Window: "[0, 10)", ID: "a", Nonce: 5, Seq: 2}
	if got != want {
		t.Errorf("Element(%q) = %+v, want %+v", "k", got, want)
	}
}

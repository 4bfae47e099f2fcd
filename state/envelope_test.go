package state

import (
	"bytes"
	"errors"
	"testing"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	tests := []Envelope{
		{},
		{ID: "a", EventTimeMs: 0, Value: []byte("v")},
		{ID: DefaultID([]byte("x")), EventTimeMs: -9223372036854775808, Value: bytes.Repeat([]byte{7}, 1<<20)},
		{ID: "", EventTimeMs: 1735689600000, Value: nil},
	}
	for i, want := range tests {
		got, err := DecodeEnvelope(want.Encode())
		if err != nil {
			t.Fatalf("case %d: DecodeEnvelope: %v", i, err)
		}
		if got.ID != want.ID || got.EventTimeMs != want.EventTimeMs || !bytes.Equal(got.Value, want.Value) {
			t.Errorf("case %d: round trip = {%q %d %d bytes}, want {%q %d %d bytes}",
				i, got.ID, got.EventTimeMs, len(got.Value), want.ID, want.EventTimeMs, len(want.Value))
		}
	}
}

func TestDecodeEnvelopeRejectsMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"wrong version", []byte{9, 0, 0}},
		{"ID longer than input", []byte{envelopeVersion, 5, 'a'}},
		{"missing event time", []byte{envelopeVersion, 1, 'a'}},
		{"truncated varint", []byte{envelopeVersion, 0x80}},
	}
	for _, tc := range tests {
		if _, err := DecodeEnvelope(tc.in); !errors.Is(err, ErrBadEnvelope) {
			t.Errorf("%s: DecodeEnvelope(%v) error = %v, want ErrBadEnvelope", tc.name, tc.in, err)
		}
	}
}

func TestDefaultID(t *testing.T) {
	if DefaultID([]byte("a")) != DefaultID([]byte("a")) {
		t.Error("DefaultID is not deterministic")
	}
	if DefaultID([]byte("a")) == DefaultID([]byte("b")) {
		t.Error("DefaultID gives two different values the same ID")
	}
	if got := len(DefaultID(nil)); got != 16 {
		t.Errorf("len(DefaultID) = %d, want 16", got)
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte{})
	f.Add(Envelope{ID: "id", EventTimeMs: 42, Value: []byte("value")}.Encode())
	f.Add([]byte{envelopeVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEnvelope(b)
		if err != nil {
			return
		}
		again, err := DecodeEnvelope(e.Encode())
		if err != nil || again.ID != e.ID || again.EventTimeMs != e.EventTimeMs || !bytes.Equal(again.Value, e.Value) {
			t.Fatalf("re-encoding %x does not round trip: %+v, %v", b, again, err)
		}
	})
}

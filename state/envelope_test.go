package state

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	tests := []Envelope{
		{},
		{ID: "a", EventTimeMs: 0, Value: []byte("v")},
		{ID: ValueID([]byte("x")), EventTimeMs: -9223372036854775808, Value: bytes.Repeat([]byte{7}, 1<<20)},
		{ID: "", EventTimeMs: 1735689600000, Value: nil},
		{ID: "r", Attempts: 2, FirstAttemptMs: 10, LastAttemptMs: 20, NextAttemptMs: 30, LastKind: "timeout", LastError: "deadline exceeded", Value: []byte("v")},
		{ID: "o", Seq: 1 << 40, Value: []byte("v")},
	}
	for i, want := range tests {
		got, err := decodeEnvelope(want.Encode())
		if err != nil {
			t.Fatalf("case %d: decodeEnvelope: %v", i, err)
		}
		got.Value, want.Value = bytes.Clone(got.Value), bytes.Clone(want.Value)
		if !reflect.DeepEqual(normal(got), normal(want)) {
			t.Errorf("case %d: round trip = %+v, want %+v", i, normal(got), normal(want))
		}
	}
}

// normal makes nil and empty values compare equal and shortens big ones.
func normal(e Envelope) Envelope {
	if len(e.Value) == 0 {
		e.Value = nil
	}
	if len(e.Value) > 16 {
		e.Value = append(e.Value[:16:16], byte(len(e.Value)))
	}
	return e
}

// TestDecodeEnvelopeReadsVersion2 checks that state written before Seq
// existed is still read, with Seq zero.
func TestDecodeEnvelopeReadsVersion2(t *testing.T) {
	v2 := []byte{tagEnvelopeV2, 1, 'a', 4, 2, 20, 30, 40, 1, 'k', 1, 'e', 'v', 'a', 'l'}
	got, err := decodeEnvelope(v2)
	if err != nil {
		t.Fatalf("decodeEnvelope(version 2): %v", err)
	}
	want := Envelope{ID: "a", EventTimeMs: 2, Attempts: 1, FirstAttemptMs: 10, LastAttemptMs: 15, NextAttemptMs: 20, LastKind: "k", LastError: "e", Value: []byte("val")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodeEnvelope(version 2) = %+v, want %+v", got, want)
	}
}

func TestDecodeEnvelopeRejectsMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"wrong version", []byte{9, 0, 0}},
		{"ID longer than input", []byte{tagEnvelope, 5, 'a'}},
		{"missing event time", []byte{tagEnvelope, 1, 'a'}},
		{"negative attempts", []byte{tagEnvelope, 0, 0, 1, 0, 0, 0, 0, 0}},
		{"truncated varint", []byte{tagEnvelope, 0x80}},
	}
	for _, tc := range tests {
		if _, err := decodeEnvelope(tc.in); !errors.Is(err, ErrBadEnvelope) {
			t.Errorf("%s: decodeEnvelope(%v) error = %v, want ErrBadEnvelope", tc.name, tc.in, err)
		}
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte{})
	f.Add(Envelope{ID: "id", EventTimeMs: 42, Value: []byte("value")}.Encode())
	f.Add([]byte{tagEnvelope, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEnvelope(b)
		if err != nil {
			return
		}
		again, err := decodeEnvelope(e.Encode())
		if err != nil || !reflect.DeepEqual(normal(again), normal(e)) {
			t.Fatalf("re-encoding %x does not round trip: %+v, %v", b, again, err)
		}
	})
}

// FuzzEnvelopeRoundTrip encodes arbitrary elements and their identities and
// checks they decode to themselves.
func FuzzEnvelopeRoundTrip(f *testing.F) {
	f.Add("id", int64(0), 0, int64(0), "", []byte("v"))
	f.Add("", int64(-1), 7, int64(1<<62), "timeout", []byte{})
	f.Fuzz(func(t *testing.T, id string, ts int64, attempts int, next int64, kind string, value []byte) {
		if attempts < 0 {
			attempts = -attempts
		}
		attempts %= 1 << 30
		in := Envelope{ID: id, EventTimeMs: ts, Attempts: attempts, NextAttemptMs: next, LastKind: kind, LastError: kind + id, Value: value}
		out, err := decodeEnvelope(in.Encode())
		if err != nil {
			t.Fatalf("decodeEnvelope(Encode(%+v)): %v", in, err)
		}
		if !reflect.DeepEqual(normal(out), normal(in)) {
			t.Fatalf("round trip = %+v, want %+v", normal(out), normal(in))
		}
		if a, b := ValueID(value), ValueID(bytes.Clone(value)); a != b || len(a) != 16 {
			t.Fatalf("ValueID is not a deterministic 16-byte identity: %x, %x", a, b)
		}
	})
}

// TestEntryRoundTrip: every kind of bag entry decodes to its members, each
// with its own bytes, and to the queue summary it holds.
func TestEntryRoundTrip(t *testing.T) {
	members := []Envelope{{ID: "a", Value: []byte("1")}, {ID: "b", Seq: 2, Attempts: 1, Value: []byte("two")}, {ID: "c"}}
	var raws [][]byte
	for _, m := range members {
		raws = append(raws, m.Encode())
	}
	q := QueueSummary{Serial: 4, Count: 2, MinEventTimeMs: -7, MaxSeq: 9, Nonce: 11, HighSeq: 12}
	for _, tc := range []struct {
		name    string
		entry   []byte
		want    []Envelope
		summary *QueueSummary
	}{
		{"batch", EncodeBatch(raws), members, nil},
		{"single", raws[1], members[1:2], nil},
		{"elements", EncodeElements(raws), members, nil},
		{"one element", EncodeElements(raws[1:2]), members[1:2], nil},
		{"empty batch", EncodeBatch(nil), nil, nil},
		{"summary", q.Encode(), nil, &q},
		{"batch with summary", EncodeWithSummary(raws, q), members, &q},
		{"one with summary", EncodeWithSummary(raws[2:], q), members[2:], &q},
		{"none with summary", EncodeWithSummary(nil, q), nil, &q},
	} {
		entry, err := DecodeEntry(tc.entry)
		if err != nil {
			t.Fatalf("%s: DecodeEntry: %v", tc.name, err)
		}
		if len(entry.Envelopes) != len(tc.want) || len(entry.Raws) != len(tc.want) {
			t.Fatalf("%s: %d members (%d raw), want %d", tc.name, len(entry.Envelopes), len(entry.Raws), len(tc.want))
		}
		for i := range entry.Envelopes {
			if !reflect.DeepEqual(normal(entry.Envelopes[i]), normal(tc.want[i])) {
				t.Errorf("%s: member %d = %+v, want %+v", tc.name, i, entry.Envelopes[i], tc.want[i])
			}
			if !bytes.Equal(entry.Raws[i], tc.want[i].Encode()) {
				t.Errorf("%s: member %d bytes differ from its encoding", tc.name, i)
			}
		}
		if got, want := entry.Summary, tc.summary; (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("%s: summary = %+v, want %+v", tc.name, got, want)
		}
	}
	bad := EncodeBatch(raws)
	summed := EncodeWithSummary(raws, q)
	for _, b := range [][]byte{bad[:len(bad)-1], append(bad, 0), {tagBatch, 0xff}, summed[:len(summed)-1], append(summed, 0),
		{tagSummed}, {tagSummed, 0xff}, {tagSummed, 1, tagEnvelope, 0}} {
		if _, err := DecodeEntry(b); !errors.Is(err, ErrBadEnvelope) {
			t.Errorf("DecodeEntry(%x) = %v, want ErrBadEnvelope", b, err)
		}
	}
}

// TestEntryLayouts pins the bytes of every entry kind a bag may hold, so
// that state written by one version reads in the next: a layout changed in
// the encoder and the decoder alike would pass the round trips above.
func TestEntryLayouts(t *testing.T) {
	v2 := []byte{tagEnvelopeV2, 1, 'a', 4, 2, 20, 30, 40, 1, 'k', 1, 'e', 'v', 'a', 'l'}
	a := Envelope{ID: "a", EventTimeMs: 2, Attempts: 1, FirstAttemptMs: 10, LastAttemptMs: 15, NextAttemptMs: 20, LastKind: "k", LastError: "e", Value: []byte("val")}
	oldSummary := []byte{tagQueueSummary, 4, 2, 6, 8} // serial 2, count 1, earliest 3, highest seq 4 (zigzag varints)
	summary := append(append([]byte(nil), oldSummary...), 9, 10)
	q := QueueSummary{Serial: 2, Count: 1, MinEventTimeMs: 3, MaxSeq: 4}
	qn := q
	qn.Nonce, qn.HighSeq = 9, 5
	for _, tc := range []struct {
		name    string
		entry   []byte
		want    []Envelope
		summary *QueueSummary
	}{
		{"version 2 envelope", v2, []Envelope{a}, nil},
		{"version 4 batch", append([]byte{tagBatch, 1, byte(len(v2))}, v2...), []Envelope{a}, nil},
		{"version 5 summary without nonce", oldSummary, nil, &q},
		{"version 5 summary", summary, nil, &qn},
		{"version 7 elements with summary", append(append([]byte{tagSummed, byte(len(summary))}, summary...), append([]byte{1, byte(len(v2))}, v2...)...), []Envelope{a}, &qn},
	} {
		entry, err := DecodeEntry(tc.entry)
		if err != nil {
			t.Errorf("%s: DecodeEntry(%x): %v", tc.name, tc.entry, err)
			continue
		}
		if !reflect.DeepEqual(entry.Envelopes, tc.want) {
			t.Errorf("%s: envelopes %+v, want %+v", tc.name, entry.Envelopes, tc.want)
		}
		if got, want := entry.Summary, tc.summary; (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("%s: summary = %+v, want %+v", tc.name, got, want)
		}
	}
	if got, want := qn.Encode(), summary; !bytes.Equal(got, want) {
		t.Errorf("QueueSummary.Encode = %x, want %x", got, want)
	}
	if got, want := EncodeBatch([][]byte{v2}), append([]byte{tagBatch, 1, byte(len(v2))}, v2...); !bytes.Equal(got, want) {
		t.Errorf("EncodeBatch = %x, want %x", got, want)
	}
	if got, want := EncodeWithSummary([][]byte{v2}, qn), append(append([]byte{tagSummed, byte(len(summary))}, summary...), append([]byte{1, byte(len(v2))}, v2...)...); !bytes.Equal(got, want) {
		t.Errorf("EncodeWithSummary = %x, want %x", got, want)
	}
}

// FuzzDecodeEntry: any bytes decode to an error or to members and a summary
// that round trip through EncodeWithSummary (or EncodeBatch).
func FuzzDecodeEntry(f *testing.F) {
	f.Add(EncodeBatch([][]byte{Envelope{ID: "a", Value: []byte("v")}.Encode()}))
	f.Add(EncodeWithSummary([][]byte{Envelope{ID: "a", Value: []byte("v")}.Encode()}, QueueSummary{Count: 1}))
	f.Add([]byte{tagBatch, 2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		entry, err := DecodeEntry(b)
		if err != nil {
			return
		}
		again := EncodeBatch(entry.Raws)
		if entry.Summary != nil {
			again = EncodeWithSummary(entry.Raws, *entry.Summary)
		}
		got, err := DecodeEntry(again)
		if err != nil || len(got.Raws) != len(entry.Raws) || (got.Summary == nil) != (entry.Summary == nil) ||
			got.Summary != nil && *got.Summary != *entry.Summary {
			t.Fatalf("re-encoding %x does not round trip: %+v, %v", b, got, err)
		}
		for i := range got.Raws {
			if !bytes.Equal(got.Raws[i], entry.Raws[i]) {
				t.Fatalf("re-encoding %x changes member %d: %x, want %x", b, i, got.Raws[i], entry.Raws[i])
			}
		}
	})
}

func TestQueueSummaryRoundTrip(t *testing.T) {
	for _, want := range []QueueSummary{{}, {Serial: 3, Count: 10, MinEventTimeMs: -5, MaxSeq: 1 << 40}} {
		b := want.Encode()
		if !isQueueSummary(b) {
			t.Fatalf("isQueueSummary(%x) = false", b)
		}
		got, err := decodeQueueSummary(b)
		if err != nil || got != want {
			t.Errorf("round trip of %+v = %+v, %v", want, got, err)
		}
		if entry, err := DecodeEntry(b); err != nil || len(entry.Envelopes) != 0 || entry.Summary == nil || *entry.Summary != want {
			t.Errorf("DecodeEntry(%x) = %+v, %v; want the summary alone", b, entry, err)
		}
	}
	for _, b := range [][]byte{{tagQueueSummary}, append(QueueSummary{Count: 1}.Encode(), 0), QueueSummary{Count: -1}.Encode()} {
		if _, err := decodeQueueSummary(b); !errors.Is(err, ErrBadEnvelope) {
			t.Errorf("decodeQueueSummary(%x) = %v, want ErrBadEnvelope", b, err)
		}
	}
}

// TestEnvelopeKeepsItsWindow: the window survives encoding, and entries of
// version 3 (no window) still decode, in the global window.
func TestEnvelopeKeepsItsWindow(t *testing.T) {
	e := Envelope{ID: "x", EventTimeMs: 5, Seq: 2, Window: "[0, 10)", Value: []byte("v")}
	got, err := decodeEnvelope(e.Encode())
	if err != nil || got.Window != e.Window || got.Seq != 2 || string(got.Value) != "v" {
		t.Errorf("round trip = %+v, %v; want %+v", got, err, e)
	}
	v3 := []byte{tagEnvelopeV3}
	v3 = appendString(v3, "x")
	for i := 0; i < 5; i++ {
		v3 = append(v3, 0) // event time, attempts, three times: varint 0
	}
	v3 = appendString(appendString(v3, ""), "")
	v3 = append(append(v3, 2), 'v') // seq 1 (zigzag), then the value
	old, err := decodeEnvelope(v3)
	if err != nil || old.Window != "" || old.Seq != 1 || string(old.Value) != "v" {
		t.Errorf("a version 3 entry decodes to %+v, %v; want seq 1, global window, value v", old, err)
	}
}

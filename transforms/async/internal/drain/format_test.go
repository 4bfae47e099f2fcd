package drain

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/asyncbeam/asyncbeam/state"
)

// envs are elements of a key, seqs as given, and their encodings.
func envs(seqs []int64) ([]state.Envelope, [][]byte) {
	var envs []state.Envelope
	var raws [][]byte
	for _, s := range seqs {
		env := state.Envelope{ID: fmt.Sprint(s), Seq: s, Nonce: 7, EventTimeMs: 1000 + s, Value: []byte{byte(s)}}
		envs, raws = append(envs, env), append(raws, env.Encode())
	}
	return envs, raws
}

// ids names elements of the key of envs.
func ids(seqs []int64) []ID {
	var out []ID
	for _, s := range seqs {
		out = append(out, ID{Nonce: 7, Seq: s})
	}
	return out
}

// record is the record of one callback that accepted escrow and committed
// release, with ordinal ord and no hold.
func record(t *testing.T, ord uint64, escrow, release []int64) Record {
	t.Helper()
	_, raws := envs(escrow)
	r, err := DecodeRecord(EncodeRecord(ord, HoldNone, raws, ids(release)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEscrowBookAnyReadOrder: the book a log makes is the same whatever
// order its entries are read in, and with entries repeated (a record
// applied twice while its pair is still in the log): each element is
// escrowed, released, both, or neither.
func TestEscrowBookAnyReadOrder(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		var log [][]byte
		for i := 0; i < 1+r.IntN(12); i++ {
			var seqs, more []int64
			for j := 0; j < 1+r.IntN(3); j++ {
				seqs, more = append(seqs, int64(r.IntN(6))), append(more, int64(r.IntN(6)))
			}
			switch r.IntN(3) {
			case 0:
				_, raws := envs(seqs)
				log = append(log, append([]byte{EntryEscrow}, state.EncodeElements(raws)...))
			case 1:
				log = append(log, IDsEntry(EntryRelease, ids(seqs)))
			default:
				log = append(log, record(t, 1, seqs, more).LogEntry())
			}
		}
		bookOf := func(entries [][]byte) (held, early []int64) {
			b := NewBook()
			for _, raw := range entries {
				if err := b.Apply(raw); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
			for _, env := range b.Held {
				held = append(held, env.Seq)
			}
			for _, id := range b.EarlyIDs() {
				early = append(early, id.Seq)
			}
			sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
			return held, early
		}
		wantHeld, wantEarly := bookOf(log)
		shuffled := append([][]byte(nil), log...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var doubled [][]byte
		for _, raw := range log {
			doubled = append(doubled, raw, raw)
		}
		for name, entries := range map[string][][]byte{"shuffled": shuffled, "each twice": doubled} {
			if held, early := bookOf(entries); !reflect.DeepEqual(held, wantHeld) || !reflect.DeepEqual(early, wantEarly) {
				t.Errorf("seed %d, %s: held %v, early %v; want %v, %v (as read in order)", seed, name, held, early, wantHeld, wantEarly)
			}
		}
	}
}

// TestEscrowRecordRoundTrip: a record reads back as written (its header,
// counts, and a body that applies as its elements), a record cut short is
// refused, and one of the earlier layout (no ordinal, no hold) reads as
// such.
func TestEscrowRecordRoundTrip(t *testing.T) {
	elems, raws := envs([]int64{3, 4})
	committed := []ID{{Nonce: 1, Seq: 1}, {Nonce: 1<<63 + 5, Seq: 1 << 40}, {Nonce: 3, Seq: 0}}
	oldLayout := func(accepted [][]byte, committed []ID) []byte { // the layout before ordinals and holds
		var part []byte
		if len(accepted) > 0 {
			part = state.EncodeElements(accepted)
		}
		b := appendUvarint(nil, uint64(len(part)))
		return AppendIDs(append(b, part...), committed)
	}
	for _, tc := range []struct {
		name string
		raws [][]byte
		ids  []ID
	}{{"both", raws, committed}, {"accepted only", raws, nil}, {"committed only", nil, committed}, {"one accepted", raws[:1], nil}} {
		for _, old := range []bool{false, true} {
			raw := EncodeRecord(1<<62+3, 12345, tc.raws, tc.ids)
			if old {
				raw = oldLayout(tc.raws, tc.ids)
			}
			r, err := DecodeRecord(raw)
			if err != nil {
				t.Fatalf("%s, old %v: %v", tc.name, old, err)
			}
			wantOrd, wantHold := uint64(1<<62+3), mtime.Time(12345)
			if old {
				wantOrd, wantHold = 0, HoldNone
			}
			if r.HasHold == old || r.Ordinal != wantOrd || r.Hold != wantHold || r.Accepted != int64(len(tc.raws)) || r.Released != int64(len(tc.ids)) {
				t.Errorf("%s, old %v: header %+v; want ordinal %d, hold %d, hasHold %v, %d accepted, %d released", tc.name, old, r, wantOrd, wantHold, !old, len(tc.raws), len(tc.ids))
			}
			b := NewBook()
			if err := b.Apply(r.LogEntry()); err != nil {
				t.Fatalf("%s, old %v: applying its log entry: %v", tc.name, old, err)
			}
			if want := elems[:len(tc.raws)]; len(b.Held)+len(tc.ids) != len(tc.raws)+len(b.Early) || (len(tc.ids) == 0 && !reflect.DeepEqual(b.Held, want)) {
				t.Errorf("%s, old %v: held %v, early %v; want %v held, %v released", tc.name, old, b.Held, b.Early, want, tc.ids)
			}
			if _, err := DecodeRecord(raw[:len(raw)-1]); err == nil {
				t.Errorf("%s, old %v: a record cut short decoded without error", tc.name, old)
			}
		}
	}
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// TestEscrowSummaryRoundTrip: a summary reads back as written; anything
// else is refused.
func TestEscrowSummaryRoundTrip(t *testing.T) {
	for _, s := range []Summary{
		NewSummary(),
		{Newest: 1 << 62, NewestHold: -5, Timer: mtime.MinTimestamp, Drained: true, Held: 1, Early: 2, Escrowed: 1 << 40, Released: 3},
	} {
		got, err := DecodeSummary(s.Encode())
		if err != nil || got != s {
			t.Errorf("decodeSummary(encode(%+v)) = %+v, %v; want it back", s, got, err)
		}
		b := s.Encode()
		for _, bad := range [][]byte{nil, b[:len(b)-1], append(append([]byte(nil), b...), 0), append([]byte{2}, b[1:]...), append([]byte{1, 2}, b[2:]...)} {
			if _, err := DecodeSummary(bad); err == nil {
				t.Errorf("decodeSummary(%x) = nil error; want one", bad)
			}
		}
	}
}

// TestCompactDue: the log is rewritten once the cancelled pairs it may
// hold weigh more than a quarter of it, and are CompactFloor or more, or
// may be all of it.
func TestCompactDue(t *testing.T) {
	for _, tc := range []struct {
		name                            string
		held, early, escrowed, released int64
		want                            bool
	}{
		{"nothing appended", 100, 5, 0, 0, false},
		{"escrows only: no pair", 0, 0, 1000, 0, false},
		{"releases of early ones only: no pair", 0, 0, 0, 1000, false},
		{"may all cancel, below the floor", 3, 0, 0, 3, true},
		{"accepted and committed at once", 0, 0, 1, 1, true},
		{"one pair, more left", 1, 0, 1, 1, false},
		{"a hot key at half its backlog", 1000, 0, 500, 500, false},
		{"a hot key past half its backlog", 1000, 0, 501, 501, true},
		{"past a quarter but under the floor", 10, 0, CompactFloor - 1, CompactFloor - 1, false},
		{"at the floor", 10, 0, CompactFloor, CompactFloor, true},
		{"early ones met by escrows", 0, 100, 100, 0, true},
		{"pairs bounded by what was appended", 1000, 1000, 1, 1, false},
	} {
		s := Summary{Held: tc.held, Early: tc.early, Escrowed: tc.escrowed, Released: tc.released}
		if got := s.CompactDue(); got != tc.want {
			t.Errorf("%s: compactDue(%+v) = %v; want %v", tc.name, s, got, tc.want)
		}
	}
}

// TestTimerChange: the drain timer is set when its hold moves, cleared
// when nothing is to be held, and left alone otherwise.
func TestTimerChange(t *testing.T) {
	for _, tc := range []struct {
		inForce, want mtime.Time
		set, clear    bool
	}{
		{HoldNone, HoldNone, false, false},
		{HoldNone, 5, true, false},
		{5, 5, false, false},
		{5, 7, true, false},
		{7, 5, true, false},
		{5, HoldNone, false, true},
	} {
		if set, clear := TimerChange(tc.inForce, tc.want); set != tc.set || clear != tc.clear {
			t.Errorf("timerChange(%d, %d) = set %v, clear %v; want %v, %v", tc.inForce, tc.want, set, clear, tc.set, tc.clear)
		}
	}
}

// TestNextOrdinal: ordinals increase strictly, across goroutines too.
func TestNextOrdinal(t *testing.T) {
	const n, per = 8, 1000
	got := make([][]uint64, n)
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				got[g] = append(got[g], NextOrdinal())
			}
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for g := range n {
		for i, o := range got[g] {
			if i > 0 && o <= got[g][i-1] {
				t.Fatalf("goroutine %d: ordinal %d after %d; want greater", g, o, got[g][i-1])
			}
			if seen[o] {
				t.Fatalf("ordinal %d given twice", o)
			}
			seen[o] = true
		}
	}
	if o := NextOrdinal(); o < uint64(time.Now().Add(-time.Hour).UnixNano()) {
		t.Errorf("ordinal %d; want about the wall clock in ns", o)
	}
}

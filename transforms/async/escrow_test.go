package async

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
)

// escrowStep is one record of streamFn: the seqs it accepted (escrowed)
// and those it committed (released).
type escrowStep struct {
	escrow, release []int64
}

func escrowEnvs(seqs []int64) ([]state.Envelope, [][]byte) {
	var envs []state.Envelope
	var raws [][]byte
	for _, s := range seqs {
		env := state.Envelope{ID: fmt.Sprint(s), Seq: s, Nonce: 7, EventTimeMs: 1000 + s, Value: []byte{byte(s)}}
		envs, raws = append(envs, env), append(raws, env.Encode())
	}
	return envs, raws
}

func (st escrowStep) record() []byte {
	_, raws := escrowEnvs(st.escrow)
	var ids []escrowID
	for _, s := range st.release {
		ids = append(ids, escrowID{Nonce: 7, Seq: s})
	}
	return callbackRecord(raws, ids)
}

// escrowKey is one key of escrowFn on in-memory state.
type escrowKey struct {
	f  *escrowFn
	st *memState
	tm *memTimers
}

func newEscrowKey(t *testing.T) *escrowKey {
	h := newHarness(t, &gated{Name: t.Name()}, stringKey, WithEndOfInputDrain())
	return &escrowKey{f: newEscrowFn(h.c), st: &memState{}, tm: &memTimers{}}
}

func (k *escrowKey) apply(rec []byte) error {
	return k.f.ProcessElement(context.Background(), k.st, k.tm, "a", rec, nil, nil)
}

// logLen is how many entries the key's log holds.
func (k *escrowKey) logLen() int { return len(k.st.bags[escrowStateID]) }

// book reads the key's log back.
func (k *escrowKey) book(t *testing.T) (held, early []int64) {
	t.Helper()
	b, err := k.f.read(k.st)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range b.held {
		held = append(held, env.Seq)
	}
	for id := range b.early {
		early = append(early, id.Seq)
	}
	sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
	sort.Slice(early, func(i, j int) bool { return early[i] < early[j] })
	return held, early
}

// TestEscrowFnRecords applies streamFn's records to escrowFn and reads its
// log back: what is held, which releases wait for their escrows, the drain
// timer's hold, and how long the log is.
func TestEscrowFnRecords(t *testing.T) {
	const none = -1 // no timer set
	for _, tc := range []struct {
		name   string
		steps  []escrowStep
		held   []int64
		early  []int64
		hold   int64 // event time ms of the drain timer's hold; none: cleared
		logLen int
	}{
		{"escrowed, not released", []escrowStep{{escrow: []int64{1, 2}}}, []int64{1, 2}, nil, 1001, 1},
		{"escrowed, then released", []escrowStep{{escrow: []int64{1, 2, 3}}, {release: []int64{1}}}, []int64{2, 3}, nil, 1002, 2},
		{"all released: the log is cleared", []escrowStep{{escrow: []int64{1, 2}}, {release: []int64{1, 2}}}, nil, nil, none, 0},
		{"released before escrowed", []escrowStep{{release: []int64{4}}}, nil, []int64{4}, none, 1},
		{"an early release cancels its escrow", []escrowStep{{release: []int64{4}}, {escrow: []int64{3, 4}}}, []int64{3}, nil, 1003, 2},
		{"an escrow copy is held once", []escrowStep{{escrow: []int64{1}}, {escrow: []int64{1, 2}}}, []int64{1, 2}, nil, 1001, 2},
		{"a release twice is one", []escrowStep{{escrow: []int64{1}}, {release: []int64{1}}, {release: []int64{1}}}, nil, []int64{1}, none, 1},
		{"accepted and committed in one callback: nothing logged", []escrowStep{{escrow: []int64{1}, release: []int64{1}}}, nil, nil, none, 0},
		{"pairs are compacted away", []escrowStep{
			{escrow: []int64{1}}, {escrow: []int64{2}, release: []int64{1}}, {escrow: []int64{3}, release: []int64{2}},
			{escrow: []int64{4}, release: []int64{3}}, {escrow: []int64{5}, release: []int64{4}},
		}, []int64{5}, nil, 1005, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newEscrowKey(t)
			for _, st := range tc.steps {
				if err := k.apply(st.record()); err != nil {
					t.Fatal(err)
				}
			}
			held, early := k.book(t)
			if !reflect.DeepEqual(held, tc.held) || !reflect.DeepEqual(early, tc.early) {
				t.Errorf("held %v, early releases %v; want %v, %v", held, early, tc.held, tc.early)
			}
			hold := int64(none)
			if last, ok := k.tm.lastSet(); ok && !last.Clear {
				hold = int64(last.HoldTimestamp)
			}
			if hold != tc.hold {
				t.Errorf("drain timer held at %d; want %d (-1: cleared or never set)", hold, tc.hold)
			}
			if n := k.logLen(); n != tc.logLen {
				t.Errorf("log holds %d entries; want %d", n, tc.logLen)
			}
		})
	}
}

// TestEscrowFnAnyOrder: each element escrowed by one record and released by
// a later one, the records applied in a random order; escrowFn must end
// empty (log cleared, timer cleared), hold the timer at the earliest held
// element throughout, and keep its log within three entries per element
// it holds or awaits (worthCompacting), not one per record seen.
func TestEscrowFnAnyOrder(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		n := 1 + r.IntN(40)
		var steps []escrowStep
		for s := int64(0); s < int64(n); s++ { // s accepted at step s, committed later
			steps = append(steps, escrowStep{escrow: []int64{s}})
		}
		for s := int64(0); s < int64(n); s++ {
			at := int(s) + 1 + r.IntN(n-int(s)) // a step after its escrow, or a new one at the end
			if at >= len(steps) {
				steps = append(steps, escrowStep{})
				at = len(steps) - 1
			}
			steps[at].release = append(steps[at].release, s)
		}
		r.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
		k := newEscrowKey(t)
		for i, st := range steps {
			if err := k.apply(st.record()); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, i, err)
			}
			held, early := k.book(t)
			if max := 3*(len(held)+len(early)) + 3; k.logLen() > max {
				t.Fatalf("seed %d step %d: log holds %d entries for %d held and %d early; want at most %d", seed, i, k.logLen(), len(held), len(early), max)
			}
			if len(held) > 0 {
				want := 1000 + held[0]
				if last, ok := k.tm.lastSet(); !ok || last.Clear || int64(last.HoldTimestamp) != want {
					t.Fatalf("seed %d step %d: drain timer %+v; want held at %d", seed, i, last, want)
				}
			}
		}
		if held, early := k.book(t); len(held)+len(early) != 0 || k.logLen() != 0 {
			t.Fatalf("seed %d: after every release, held %v, early %v, log of %d entries; want all empty", seed, held, early, k.logLen())
		}
		if last, ok := k.tm.lastSet(); ok && !last.Clear {
			t.Fatalf("seed %d: drain timer %+v at the end; want cleared or never set", seed, last)
		}
	}
}

// TestEscrowBookReleaseOfDrained: an escrow or release of an element the
// drain ran is refused with the cause, whichever order the log's entries
// are read in.
func TestEscrowBookReleaseOfDrained(t *testing.T) {
	b := newEscrowBook()
	b.drained[escrowID{7, 2}] = true
	if err := b.release([]escrowID{{7, 1}}); err != nil {
		t.Errorf("release of an element not drained: %v; want nil", err)
	}
	if err := b.release([]escrowID{{7, 2}}); err != errDrainedTwice {
		t.Errorf("release of a drained element: %v; want errDrainedTwice", err)
	}
	envs, raws := escrowEnvs([]int64{2})
	if err := b.escrow(envs, raws); err != errDrainedTwice {
		t.Errorf("escrow of a drained element: %v; want errDrainedTwice", err)
	}
	// A log whose drained entry is read after the escrow of a drained
	// element: read must refuse it too.
	for _, reversed := range []bool{false, true} {
		k := newEscrowKey(t)
		k.st.reversed = reversed
		k.st.bags = map[string][]any{escrowStateID: {
			append([]byte{entryEscrow}, oneEntry(raws)...),
			idsEntry(entryDrained, []escrowID{{7, 2}}),
		}}
		if _, err := k.f.read(k.st); !errors.Is(err, errDrainedTwice) {
			t.Errorf("reversed %v: reading a log that escrows a drained element: %v; want errDrainedTwice", reversed, err)
		}
	}
}

// TestEscrowBookAnyReadOrder: the book a log makes is the same whatever
// order its entries are read in, and with entries repeated (a record
// applied twice while its pair is still in the log): each element is
// escrowed, released, both, or neither. Before the book became two sets,
// an escrow read after its cancelled pair was held again.
func TestEscrowBookAnyReadOrder(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		var log [][]byte
		for i := 0; i < 1+r.IntN(12); i++ {
			var seqs []int64
			for j := 0; j < 1+r.IntN(3); j++ {
				seqs = append(seqs, int64(r.IntN(6)))
			}
			if r.IntN(2) == 0 {
				_, raws := escrowEnvs(seqs)
				log = append(log, append([]byte{entryEscrow}, oneEntry(raws)...))
				continue
			}
			var ids []escrowID
			for _, s := range seqs {
				ids = append(ids, escrowID{Nonce: 7, Seq: s})
			}
			log = append(log, idsEntry(entryRelease, ids))
		}
		bookOf := func(entries [][]byte) (held, early []int64) {
			b := newEscrowBook()
			for _, raw := range entries {
				if err := b.apply(raw); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
			for _, env := range b.held {
				held = append(held, env.Seq)
			}
			for _, id := range b.earlyIDs() {
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

// TestEscrowFnEarlyReleaseOutlivesDrain: the drain keeps the early
// releases in the log beside the drained elements, so an escrow of a
// released element that comes after the drain is cancelled, not held for
// a second drain (an output twice).
func TestEscrowFnEarlyReleaseOutlivesDrain(t *testing.T) {
	k := newEscrowKey(t)
	if err := k.apply(escrowStep{release: []int64{5}}.record()); err != nil {
		t.Fatal(err)
	}
	if err := k.f.OnTimer(context.Background(), k.st, k.tm, "a", beamtimers.Context{Family: drainFamily}, nil, nil); err != nil {
		t.Fatal(err)
	}
	k.tm.forget()
	if err := k.apply(escrowStep{escrow: []int64{5}}.record()); err != nil {
		t.Fatal(err)
	}
	if held, early := k.book(t); len(held)+len(early) != 0 {
		t.Errorf("after the drain, an escrow of an element released before it: held %v, early %v; want both empty", held, early)
	}
	if last, ok := k.tm.lastSet(); ok && !last.Clear {
		t.Errorf("drain timer %+v; want none set", last)
	}
}

func TestCallbackRecordRoundTrip(t *testing.T) {
	envs, raws := escrowEnvs([]int64{3, 4})
	ids := []escrowID{{1, 1}, {1<<63 + 5, 1 << 40}, {3, 0}}
	for _, tc := range []struct {
		name string
		raws [][]byte
		ids  []escrowID
	}{{"both", raws, ids}, {"accepted only", raws, nil}, {"committed only", nil, ids}, {"one accepted", raws[:1], nil}} {
		rec := callbackRecord(tc.raws, tc.ids)
		entry, got, err := decodeCallbackRecord(rec)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(entry.Envelopes) != len(tc.raws) || (len(tc.raws) > 0 && !reflect.DeepEqual(entry.Envelopes, envs[:len(tc.raws)])) {
			t.Errorf("%s: accepted %v; want %v", tc.name, entry.Envelopes, envs[:len(tc.raws)])
		}
		if !reflect.DeepEqual(got, tc.ids) {
			t.Errorf("%s: committed %v; want %v", tc.name, got, tc.ids)
		}
		if _, _, err := decodeCallbackRecord(rec[:len(rec)-1]); err == nil {
			t.Errorf("%s: a record cut short decoded without error", tc.name)
		}
	}
}

// TestDrainFiring: the drain timer of every hold fires after any event time
// a watermark reaches before the end of input (the year 3000 here), no
// earlier than its hold (Flink holds nothing for a later hold), no later
// than the global window's end, and at another instant for another hold
// less than drainSpan away (see drainFiring), also across the band's lower
// edge, where the firing turns from congruent to the hold itself.
func TestDrainFiring(t *testing.T) {
	year3000 := mtime.FromTime(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	end := mtime.EndOfGlobalWindowTime
	band := end - mtime.Time(drainSpan)
	check := func(hold mtime.Time) mtime.Time {
		f := drainFiring(hold)
		if f <= year3000 || f > end {
			t.Errorf("drainFiring(%d) = %d; want in (%d, %d]", hold, f, year3000, end)
		}
		if f < hold {
			t.Errorf("drainFiring(%d) = %d; want at or after the hold", hold, f)
		}
		return f
	}
	for _, holds := range [][]mtime.Time{
		{mtime.MinTimestamp, -1, 0, 1, 2, mtime.Now(), mtime.Now() + 1, year3000},
		{band - 2, band - 1, band, band + 1, band + 2},
		{band, end - 2, end - 1, end},
		// k ms apart, where k is the band's offset from a multiple of
		// drainSpan: a firing congruent to the hold above the edge would
		// give both one instant.
		{end - 2*mtime.Time(int64(end)%drainSpan), end - mtime.Time(int64(end)%drainSpan)},
	} { // each list within drainSpan
		seen := map[mtime.Time]mtime.Time{}
		for _, hold := range holds {
			f := check(hold)
			if other, ok := seen[f]; ok {
				t.Errorf("holds %d and %d fire at the same instant %d", other, hold, f)
			}
			seen[f] = hold
		}
	}
	// Pairs less than drainSpan apart, around the band's lower edge and
	// across the whole range of event times.
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		var a mtime.Time
		switch i % 3 {
		case 0:
			a = band - mtime.Time(drainSpan) + mtime.Time(r.Int64N(2*drainSpan))
		case 1:
			a = mtime.MinTimestamp + mtime.Time(r.Int64N(int64(end-mtime.MinTimestamp)))
		default:
			a = band - mtime.Time(r.Int64N(1000)) // the edge, by ms
		}
		b := a + 1 + mtime.Time(r.Int64N(drainSpan-1))
		if i%3 == 2 {
			b = a + 1 + mtime.Time(r.Int64N(2000))
		}
		if b > end {
			continue
		}
		if fa, fb := check(a), check(b); fa == fb {
			t.Fatalf("holds %d and %d (%d apart) fire at the same instant %d", a, b, b-a, fa)
		}
	}
}

// TestEscrowReleasesDroppedCopies: with WithIDFn, a record whose ID equals a
// queued element's is accepted and escrowed as an element of its own, and
// dropped as a copy when the queue is read; the drain must see it
// released, or it would run it at the end of input (an output twice) and
// hold the watermark at it until then. Every key callback's records go to
// one escrow book, which must hold nothing once the key is empty.
func TestEscrowReleasesDroppedCopies(t *testing.T) {
	h := newHarness(t, &gated{Name: t.Name()}, stringKey, WithIDFn(parity), WithParallelism(1),
		WithMaxItemsToBuffer(1), WithMaxItemsHeld(1), WithEndOfInputDrain())
	for _, v := range []int{1, 2, 4} {
		book.open(gateID(t.Name(), "a", v))
	}
	escrowed := newEscrowBook()
	records := 0
	escrow := func(_ beam.EventTime, key beam.X, rec []byte) {
		records++
		accepted, committed, err := decodeCallbackRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := escrowed.escrow(accepted.Envelopes, accepted.Raws); err != nil {
			t.Fatal(err)
		}
		if err := escrowed.release(committed); err != nil {
			t.Fatal(err)
		}
	}
	f := h.stream()
	ctx := context.Background()
	for _, v := range []int{1, 2, 4} { // 1 takes the only place; 2 and 4 (ID "0" both) queue
		f.StartBundle(ctx, nil, nil, nil)
		if err := f.ProcessElement(ctx, mtime.FromTime(h.clock.Now()), h.st("a"), h.tm("a"), "a", v, h.emitter("a"), h.fail, escrow); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for i := 0; i < 20 && h.st("a").size() > 0; i++ {
		h.waitKey("a")
		h.clock.Advance(time.Second)
		f.StartBundle(ctx, nil, nil, nil)
		if err := f.OnTimer(ctx, h.st("a"), h.tm("a"), "a", beamtimers.Context{Family: commitFamily}, h.emitter("a"), h.fail, escrow); err != nil {
			t.Fatal(err)
		}
		out = append(out, h.early["a"]...)
		delete(h.early, "a")
	}
	if n := h.st("a").size(); n != 0 {
		t.Fatalf("key still holds %d elements; outputs %v", n, out)
	}
	if records == 0 {
		t.Fatal("no escrow record sent")
	}
	if len(escrowed.held) != 0 {
		var seqs []int64
		for _, env := range escrowed.held {
			seqs = append(seqs, env.Seq)
		}
		t.Errorf("the drain would hold seqs %v after the key emptied (outputs %v); want none", seqs, out)
	}
}

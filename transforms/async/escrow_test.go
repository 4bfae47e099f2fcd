package async

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/drain"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// escrowStep is one key callback of streamFn: the seqs it accepted
// (escrowed) and those it committed (released). ord is its place among the
// key's callbacks, from 1 (zero: its place in the list given).
type escrowStep struct {
	ord             int
	escrow, release []int64
}

// eventTime is the event time (ms) of the element of seq s.
func eventTime(s int64) int64 { return 1000 + s }

// intEncoder encodes the values of escrowed test elements, as the
// transform's input coder would (its drain decodes them).
var intEncoder = beam.NewElementEncoder(reflect.TypeOf(0))

func escrowEnvs(seqs []int64) ([]state.Envelope, [][]byte) {
	var envs []state.Envelope
	var raws [][]byte
	for _, s := range seqs {
		value, err := wrapped.Encode(intEncoder, int(s))
		if err != nil {
			panic(err)
		}
		env := state.Envelope{ID: fmt.Sprint(s), Seq: s, Nonce: 7, EventTimeMs: eventTime(s), Value: value}
		envs, raws = append(envs, env), append(raws, env.Encode())
	}
	return envs, raws
}

func escrowIDs(seqs []int64) []drain.ID {
	var ids []drain.ID
	for _, s := range seqs {
		ids = append(ids, drain.ID{Nonce: 7, Seq: s})
	}
	return ids
}

// record is the step's record, with the key's hold after it.
func (st escrowStep) record(hold mtime.Time) []byte {
	_, raws := escrowEnvs(st.escrow)
	return drain.EncodeRecord(uint64(st.ord), hold, raws, escrowIDs(st.release))
}

// timestamp is the record's timestamp, as package stream gives it.
func (st escrowStep) timestamp() mtime.Time {
	at := int64(mtime.MaxTimestamp)
	for _, s := range append(append([]int64(nil), st.escrow...), st.release...) {
		at = min(at, eventTime(s))
	}
	return mtime.Time(at)
}

// history is the key's callbacks in their order (by ord): the hold after
// each, and what the key holds after the last.
type history struct {
	holds   map[int]mtime.Time
	pending map[int64]bool
	// escrowedAt and releasedAt are the ords of each seq's callbacks.
	escrowedAt, releasedAt map[int64]int
}

// play numbers the steps that have no ord by their place, and plays them
// in ord order as streamFn's key would have lived them.
func play(steps []escrowStep) history {
	for i := range steps {
		if steps[i].ord == 0 {
			steps[i].ord = i + 1
		}
	}
	byOrd := append([]escrowStep(nil), steps...)
	sort.Slice(byOrd, func(i, j int) bool { return byOrd[i].ord < byOrd[j].ord })
	h := history{holds: map[int]mtime.Time{}, pending: map[int64]bool{}, escrowedAt: map[int64]int{}, releasedAt: map[int64]int{}}
	for _, st := range byOrd {
		for _, s := range st.escrow {
			h.pending[s], h.escrowedAt[s] = true, st.ord
		}
		for _, s := range st.release {
			delete(h.pending, s)
			h.releasedAt[s] = st.ord
		}
		h.holds[st.ord] = h.hold()
	}
	return h
}

// hold is the earliest event time pending, or drain.HoldNone.
func (h history) hold() mtime.Time {
	first := drain.HoldNone
	for s := range h.pending {
		first = min(first, mtime.Time(eventTime(s)))
	}
	return first
}

// runs numbers the runs of tests (runName).
var runs atomic.Int64

// runName names the gates of one run of a test: its name and the run's
// number, so that a test run again in one process (-count) has new gates.
func runName(t testing.TB) string { return fmt.Sprintf("%s#%d", t.Name(), runs.Add(1)) }

// escrowKey is one key of escrowFn on in-memory state; name names its
// gates.
type escrowKey struct {
	f    *escrowFn
	st   *memState
	tm   *memTimers
	name string
}

func newEscrowKey(t *testing.T) *escrowKey {
	name := runName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithEndOfInputDrain())
	return &escrowKey{f: newEscrowFn(h.c), st: &memState{}, tm: &memTimers{}, name: name}
}

func (k *escrowKey) apply(rec []byte) error {
	return k.f.ProcessElement(context.Background(), k.st, k.tm, "a", rec, nil, nil)
}

// applyAll plays steps (play) and applies their records in the order given.
func (k *escrowKey) applyAll(t *testing.T, steps []escrowStep) history {
	t.Helper()
	h := play(steps)
	for _, st := range steps {
		if err := k.apply(st.record(h.holds[st.ord])); err != nil {
			t.Fatalf("record %d: %v", st.ord, err)
		}
	}
	return h
}

// logLen is how many entries the key's log holds.
func (k *escrowKey) logLen() int { return len(k.st.bags[drain.LogStateID]) }

// named counts the elements the key's log names (an element escrowed and
// released counts twice).
func (k *escrowKey) named(t *testing.T) int {
	t.Helper()
	n := 0
	for _, e := range k.st.bags[drain.LogStateID] {
		raw := e.([]byte)
		switch raw[0] {
		case drain.EntryEscrow:
			n += len(mustDecode(raw[1:]).Envelopes)
		case drain.EntryRecord:
			acc, _, ids, err := drain.SplitBody(raw[1:])
			c, err2 := drain.CountIDs(ids)
			if err != nil || err2 != nil {
				t.Fatalf("a log entry: %v, %v", err, err2)
			}
			n += int(acc) + c
		default:
			c, err := drain.CountIDs(raw[1:])
			if err != nil {
				t.Fatal(err)
			}
			n += c
		}
	}
	return n
}

// book reads the key's log back.
func (k *escrowKey) book(t *testing.T) (held, early []int64) {
	t.Helper()
	b, err := k.f.drainPath().Read(k.st)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range b.Held {
		held = append(held, env.Seq)
	}
	for id := range b.Early {
		early = append(early, id.Seq)
	}
	sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
	sort.Slice(early, func(i, j int) bool { return early[i] < early[j] })
	return held, early
}

// summary reads the key's summary back; false: none is stored.
func (k *escrowKey) summary(t *testing.T) (drain.Summary, bool) {
	t.Helper()
	entries := k.st.bags[drain.SummaryStateID]
	switch len(entries) {
	case 0:
		return drain.Summary{}, false
	case 1:
		sum, err := drain.DecodeSummary(entries[0].([]byte))
		if err != nil {
			t.Fatal(err)
		}
		return sum, true
	}
	t.Fatalf("the summary bag holds %d entries; want at most one", len(entries))
	return drain.Summary{}, false
}

// timerHold is the drain timer's hold, or drain.HoldNone when none is set.
func (k *escrowKey) timerHold() mtime.Time {
	if last, ok := k.tm.lastSet(); ok && !last.Clear {
		return last.HoldTimestamp
	}
	return drain.HoldNone
}

// TestEscrowFnRecords applies streamFn's records to escrowFn and reads its
// state back: what is held, which releases wait for their escrows, the
// drain timer's hold, how long the log is, and whether a summary is kept.
// A key whose log holds nothing keeps no state; pairs stay in the log
// until they weigh enough (drain.Summary.CompactDue).
func TestEscrowFnRecords(t *testing.T) {
	for _, tc := range []struct {
		name        string
		steps       []escrowStep
		held, early []int64
		hold        mtime.Time
		logLen      int
	}{
		{"escrowed, not released", []escrowStep{{escrow: []int64{1, 2}}}, []int64{1, 2}, nil, 1001, 1},
		{"escrowed, then released", []escrowStep{{escrow: []int64{1, 2, 3}}, {release: []int64{1}}}, []int64{2, 3}, nil, 1002, 2},
		{"all released: no state", []escrowStep{{escrow: []int64{1, 2}}, {release: []int64{1, 2}}}, nil, nil, drain.HoldNone, 0},
		{"released, its escrow not arrived", []escrowStep{{ord: 2, release: []int64{4}}}, nil, []int64{4}, drain.HoldNone, 1},
		{"an early release cancels its escrow", []escrowStep{{ord: 2, release: []int64{4}}, {ord: 1, escrow: []int64{3, 4}}}, []int64{3}, nil, 1003, 2},
		{"an escrow copy is held once", []escrowStep{{escrow: []int64{1}}, {escrow: []int64{1, 2}}}, []int64{1, 2}, nil, 1001, 2},
		{"a release twice is one", []escrowStep{{escrow: []int64{1}}, {release: []int64{1}}, {release: []int64{1}}}, nil, []int64{1}, drain.HoldNone, 1},
		{"accepted and committed in one callback: no state", []escrowStep{{escrow: []int64{1}, release: []int64{1}}}, nil, nil, drain.HoldNone, 0},
		{"pairs stay while they weigh little", []escrowStep{
			{escrow: []int64{1}}, {escrow: []int64{2}, release: []int64{1}}, {escrow: []int64{3}, release: []int64{2}},
			{escrow: []int64{4}, release: []int64{3}}, {escrow: []int64{5}, release: []int64{4}},
		}, []int64{5}, nil, 1005, 5},
		{"the newest record's hold, whatever the order", []escrowStep{
			{ord: 3, escrow: []int64{9}, release: []int64{2}}, {ord: 1, escrow: []int64{1, 2}}, {ord: 2, release: []int64{1}},
		}, []int64{9}, nil, 1009, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newEscrowKey(t)
			k.applyAll(t, tc.steps)
			held, early := k.book(t)
			if !reflect.DeepEqual(held, tc.held) || !reflect.DeepEqual(early, tc.early) {
				t.Errorf("held %v, early releases %v; want %v, %v", held, early, tc.held, tc.early)
			}
			if hold := k.timerHold(); hold != tc.hold {
				t.Errorf("drain timer held at %d; want %d (%d: cleared or never set)", hold, tc.hold, drain.HoldNone)
			}
			if n := k.logLen(); n != tc.logLen {
				t.Errorf("log holds %d entries; want %d", n, tc.logLen)
			}
			if _, kept := k.summary(t); kept != (tc.logLen > 0) {
				t.Errorf("summary kept %v with a log of %d entries; want one exactly with a log", kept, tc.logLen)
			}
		})
	}
}

// TestEscrowFnAnyOrder: a key's records (each element escrowed by one
// callback and released by a later one, or never) arrive in a random
// order. Throughout, the drain timer is held no later than any element
// held that was pending at the newest record applied, and the watermark
// it and the records in flight make is no later than any element left at
// the end; the log names at most twice its book, or its book and
// 2 × drain.CompactFloor. Once all have arrived the hold is exact, the book is
// what the key holds, and a key left empty has no state and no timer.
func TestEscrowFnAnyOrder(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		n := 1 + r.IntN(120)
		var steps []escrowStep
		for s := int64(0); s < int64(n); s++ { // s accepted at step s, committed later or never
			steps = append(steps, escrowStep{escrow: []int64{s}})
		}
		keep := r.IntN(3) == 0 // some elements are left for the drain
		for s := int64(0); s < int64(n); s++ {
			if keep && r.IntN(4) == 0 {
				continue
			}
			at := int(s) + r.IntN(n-int(s)+1) // in its own callback, a later one, or a new one at the end
			if at >= len(steps) {
				steps = append(steps, escrowStep{})
				at = len(steps) - 1
			}
			steps[at].release = append(steps[at].release, s)
		}
		h := play(steps)
		end := h.hold()
		r.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
		k := newEscrowKey(t)
		for i, st := range steps {
			if err := k.apply(st.record(h.holds[st.ord])); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, i, err)
			}
			held, early := k.book(t)
			if named, limit := k.named(t), max(2*(len(held)+len(early)), len(held)+len(early)+2*drain.CompactFloor); named > limit {
				t.Fatalf("seed %d step %d: log names %d elements for %d held and %d early; want at most %d", seed, i, named, len(held), len(early), limit)
			}
			hold := k.timerHold()
			if sum, ok := k.summary(t); ok {
				for _, s := range held {
					pendingThen := h.escrowedAt[s] <= int(sum.Newest) && (h.releasedAt[s] == 0 || h.releasedAt[s] > int(sum.Newest))
					if pendingThen && hold > mtime.Time(eventTime(s)) {
						t.Fatalf("seed %d step %d: drain timer held at %d, after element %d (%d) held and pending at the newest record %d", seed, i, hold, s, eventTime(s), sum.Newest)
					}
				}
			}
			wm := hold
			for _, later := range steps[i+1:] {
				wm = min(wm, later.timestamp())
			}
			if wm > end {
				t.Fatalf("seed %d step %d: the drain's watermark %d passed an element left at the end (%d)", seed, i, wm, end)
			}
		}
		held, early := k.book(t)
		var want []int64
		for s := range h.pending {
			want = append(want, s)
		}
		sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
		if !reflect.DeepEqual(held, want) || len(early) != 0 {
			t.Fatalf("seed %d: after every record, held %v, early %v; want held %v, no early", seed, held, early, want)
		}
		if hold := k.timerHold(); hold != end {
			t.Fatalf("seed %d: after every record the drain timer is held at %d; want %d (the key's hold after its last callback)", seed, hold, end)
		}
		if _, kept := k.summary(t); len(want) == 0 && (k.logLen() != 0 || kept) {
			t.Fatalf("seed %d: an empty key keeps a log of %d entries, a summary %v; want no state", seed, k.logLen(), kept)
		}
	}
}

// TestEscrowRecordReadsFlat: a hot key whose callbacks each accept one
// element and commit one, with a backlog of 10, 1,000 or 10,000 elements
// escrowed: what its records read of escrowFn's state per record does not
// grow with the backlog (a read of the summary, and rewrites whose cost
// spreads over the records since the last), and its log stays within twice
// its book, or its book and 2 × drain.CompactFloor.
func TestEscrowRecordReadsFlat(t *testing.T) {
	perRecord := map[int]float64{}
	for _, backlog := range []int{10, 1_000, 10_000} {
		k := newEscrowKey(t)
		ord := 0
		step := func(st escrowStep, hold int64) {
			ord++
			st.ord = ord
			if err := k.apply(st.record(mtime.Time(hold))); err != nil {
				t.Fatal(err)
			}
		}
		for s := int64(0); s < int64(backlog); s++ {
			step(escrowStep{escrow: []int64{s}}, eventTime(0))
		}
		k.st.readsOf(drain.LogStateID)
		k.st.readsOf(drain.SummaryStateID)
		records := 2*backlog + 1_000
		for i := int64(0); i < int64(records); i++ {
			step(escrowStep{escrow: []int64{int64(backlog) + i}, release: []int64{i}}, eventTime(i+1))
			if backlog <= 1_000 {
				if named, limit := k.named(t), max(2*backlog, backlog+2*drain.CompactFloor); named > limit {
					t.Fatalf("backlog %d, record %d: log names %d elements; want at most %d", backlog, i, named, limit)
				}
			}
		}
		logReads, logBytes := k.st.readsOf(drain.LogStateID)
		sumReads, sumBytes := k.st.readsOf(drain.SummaryStateID)
		if logReads == 0 {
			t.Errorf("backlog %d: the log was never read over %d records; want its rewrites", backlog, records)
		}
		if reads := float64(logReads+sumReads) / float64(records); reads > 1.1 {
			t.Errorf("backlog %d: %.2f reads per record; want about one (the summary)", backlog, reads)
		}
		perRecord[backlog] = float64(logBytes+sumBytes) / float64(records)
		t.Logf("backlog %d: %d records read the log %d times, %.1f bytes per record", backlog, records, logReads, perRecord[backlog])
		if held, _ := k.book(t); len(held) != backlog {
			t.Errorf("backlog %d: %d elements held at the end; want %d", backlog, len(held), backlog)
		}
	}
	if perRecord[10_000] > 4*perRecord[10] {
		t.Errorf("bytes read per record: %.1f at a backlog of 10,000, %.1f at 10; want them within 4 ×", perRecord[10_000], perRecord[10])
	}
}

// TestEscrowBookReleaseOfDrained: an escrow or release of an element the
// drain ran is refused with the cause, whichever order the log's entries
// are read in.
func TestEscrowBookReleaseOfDrained(t *testing.T) {
	b := drain.NewBook()
	b.Drained[drain.ID{Nonce: 7, Seq: 2}] = true
	if err := b.Release([]drain.ID{{Nonce: 7, Seq: 1}}); err != nil {
		t.Errorf("release of an element not drained: %v; want nil", err)
	}
	if err := b.Release([]drain.ID{{Nonce: 7, Seq: 2}}); err != drain.ErrDrainedTwice {
		t.Errorf("release of a drained element: %v; want drain.ErrDrainedTwice", err)
	}
	envs, raws := escrowEnvs([]int64{2})
	if err := b.Escrow(envs, raws); err != drain.ErrDrainedTwice {
		t.Errorf("escrow of a drained element: %v; want drain.ErrDrainedTwice", err)
	}
	// A log whose drained entry is read after the escrow of a drained
	// element: read must refuse it too.
	for _, reversed := range []bool{false, true} {
		for name, escrowEntry := range map[string][]byte{
			"escrow entry": append([]byte{drain.EntryEscrow}, state.EncodeElements(raws)...),
			"record entry": mustRecord(t, escrowStep{ord: 1, escrow: []int64{2}}.record(drain.HoldNone)).LogEntry(),
		} {
			k := newEscrowKey(t)
			k.st.reversed = reversed
			k.st.bags = map[string][]any{drain.LogStateID: {escrowEntry, drain.IDsEntry(drain.EntryDrained, []drain.ID{{Nonce: 7, Seq: 2}})}}
			if _, err := k.f.drainPath().Read(k.st); !errors.Is(err, drain.ErrDrainedTwice) {
				t.Errorf("%s, reversed %v: reading a log that escrows a drained element: %v; want drain.ErrDrainedTwice", name, reversed, err)
			}
		}
	}
}

func mustRecord(t *testing.T, raw []byte) drain.Record {
	t.Helper()
	r, err := drain.DecodeRecord(raw)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEscrowFnDrainedTwice: once a drain has run, a record that commits
// or accepts an element it ran fails the key (drain.ErrDrainedTwice).
func TestEscrowFnDrainedTwice(t *testing.T) {
	for name, late := range map[string]escrowStep{"release": {ord: 3, release: []int64{2}}, "escrow": {ord: 3, escrow: []int64{2}}} {
		t.Run(name, func(t *testing.T) {
			k := newEscrowKey(t)
			k.applyAll(t, []escrowStep{{escrow: []int64{1, 2}}, {release: []int64{1}}})
			ctx := context.Background()
			book.open(gateID(k.name, "a", 2))
			if err := k.f.StartBundle(ctx, discard, discardFailure); err != nil {
				t.Fatal(err)
			}
			if err := k.f.OnTimer(ctx, k.st, k.tm, "a", beamtimers.Context{Family: k.f.Drain.Family}, discard, discardFailure); err != nil {
				t.Fatal(err)
			}
			if err := k.f.FinishBundle(ctx, discard, discardFailure); err != nil {
				t.Fatal(err)
			}
			if err := k.apply(late.record(drain.HoldNone)); !errors.Is(err, drain.ErrDrainedTwice) {
				t.Errorf("after the drain, record %+v: %v; want drain.ErrDrainedTwice", late, err)
			}
		})
	}
}

func discard(beam.EventTime, beam.Z)         {}
func discardFailure(beam.EventTime, Failure) {}

// TestEscrowFnEarlyReleaseOutlivesDrain: the drain keeps the early
// releases in the log beside the drained elements, so an escrow of a
// released element that comes after the drain is cancelled, not held for
// a second drain (an output twice).
func TestEscrowFnEarlyReleaseOutlivesDrain(t *testing.T) {
	k := newEscrowKey(t)
	if err := k.apply(escrowStep{ord: 2, release: []int64{5}}.record(drain.HoldNone)); err != nil {
		t.Fatal(err)
	}
	if err := k.f.OnTimer(context.Background(), k.st, k.tm, "a", beamtimers.Context{Family: k.f.Drain.Family}, nil, nil); err != nil {
		t.Fatal(err)
	}
	k.tm.forget()
	if err := k.apply(escrowStep{ord: 1, escrow: []int64{5}}.record(drain.HoldNone)); err != nil {
		t.Fatal(err)
	}
	if held, early := k.book(t); len(held)+len(early) != 0 {
		t.Errorf("after the drain, an escrow of an element released before it: held %v, early %v; want both empty", held, early)
	}
	if last, ok := k.tm.lastSet(); ok && !last.Clear {
		t.Errorf("drain timer %+v; want none set", last)
	}
}

// TestEscrowReleasesDroppedCopies: with WithIDFn, a record whose ID equals a
// queued element's is accepted and escrowed as an element of its own, and
// dropped as a copy when the queue is read; the drain must see it
// released, or it would run it at the end of input (an output twice) and
// hold the watermark at it until then. Every key callback's records go to
// one escrow book, which must hold nothing once the key is empty. Each
// record carries a greater ordinal than the one before, and the key's hold
// after its callback: the output timestamp of the key's commit timer, or
// none once the key is empty.
func TestEscrowReleasesDroppedCopies(t *testing.T) {
	name := runName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithIDFn(parity), WithParallelism(1),
		WithMaxItemsToBuffer(1), WithMaxItemsHeld(1), WithEndOfInputDrain())
	for _, v := range []int{1, 2, 4} {
		book.open(gateID(name, "a", v))
	}
	escrowed := drain.NewBook()
	var last drain.Record
	records := 0
	escrow := func(_ beam.EventTime, key beam.X, raw []byte) {
		records++
		r, err := drain.DecodeRecord(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !r.HasHold || r.Ordinal <= last.Ordinal {
			t.Errorf("record %d: ordinal %d after %d, hasHold %v; want a greater ordinal and a hold", records, r.Ordinal, last.Ordinal, r.HasHold)
		}
		last = r
		if err := escrowed.ApplyBody(r.Body); err != nil {
			t.Fatal(err)
		}
	}
	// checkHold compares the last record's hold with the key's timer,
	// which plan sets after store sent the record.
	checkHold := func() {
		want := drain.HoldNone
		if tm, ok := h.tm("a").lastSet(); ok && h.st("a").size() > 0 {
			want = tm.HoldTimestamp
		}
		if last.Hold != want {
			t.Errorf("record %d carries hold %d; want the key's %d", records, last.Hold, want)
		}
	}
	f := h.stream()
	ctx := context.Background()
	for _, v := range []int{1, 2, 4} { // 1 takes the only place; 2 and 4 (ID "0" both) queue
		f.StartBundle(ctx, nil, nil, nil)
		if err := f.ProcessElement(ctx, mtime.FromTime(h.clock.Now()), h.st("a"), h.tm("a"), "a", v, h.emitter("a"), h.fail, escrow); err != nil {
			t.Fatal(err)
		}
		checkHold()
		h.clock.Advance(time.Millisecond) // each element its own event time
	}
	var out []string
	for i := 0; i < 20 && h.st("a").size() > 0; i++ {
		h.waitKey("a")
		h.clock.Advance(time.Second)
		f.StartBundle(ctx, nil, nil, nil)
		if err := f.OnTimer(ctx, h.st("a"), h.tm("a"), "a", beamtimers.Context{Family: f.Commit.Family}, h.emitter("a"), h.fail, escrow); err != nil {
			t.Fatal(err)
		}
		checkHold()
		out = append(out, h.early["a"]...)
		delete(h.early, "a")
	}
	if n := h.st("a").size(); n != 0 {
		t.Fatalf("key still holds %d elements; outputs %v", n, out)
	}
	if records == 0 {
		t.Fatal("no escrow record sent")
	}
	if len(escrowed.Held) != 0 {
		var seqs []int64
		for _, env := range escrowed.Held {
			seqs = append(seqs, env.Seq)
		}
		t.Errorf("the drain would hold seqs %v after the key emptied (outputs %v); want none", seqs, out)
	}
	if last.Hold != drain.HoldNone {
		t.Errorf("the last record carries hold %d; want none (the key is empty)", last.Hold)
	}
}

package async

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
)

// escrowStep is one record applied to a book: escrow (the seqs given) or
// release.
type escrowStep struct {
	escrow bool
	seqs   []int64
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

func TestEscrowBook(t *testing.T) {
	for _, tc := range []struct {
		name      string
		steps     []escrowStep
		held      []int64 // seqs, in book order
		early     []int64
		earliest  int64 // event time ms of the earliest held (MaxTimestamp: none)
		wantAdded int   // elements the last step added
	}{
		{"escrowed, not released", []escrowStep{{true, []int64{1, 2}}}, []int64{1, 2}, nil, 1001, 2},
		{"escrowed, then released", []escrowStep{{true, []int64{1, 2, 3}}, {false, []int64{2}}}, []int64{1, 3}, nil, 1001, 0},
		{"all released", []escrowStep{{true, []int64{1, 2}}, {false, []int64{1, 2}}}, nil, nil, int64(mtime.MaxTimestamp), 0},
		{"released before escrowed", []escrowStep{{false, []int64{4}}}, nil, []int64{4}, int64(mtime.MaxTimestamp), 0},
		{"an early release cancels its escrow", []escrowStep{{false, []int64{4}}, {true, []int64{3, 4}}}, []int64{3}, nil, 1003, 1},
		{"an escrow copy is held once", []escrowStep{{true, []int64{1}}, {true, []int64{1, 2}}}, []int64{1, 2}, nil, 1001, 1},
		{"a release twice is one", []escrowStep{{true, []int64{1}}, {false, []int64{1}}, {false, []int64{1}}}, nil, []int64{1}, int64(mtime.MaxTimestamp), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newEscrowBook()
			var added [][]byte
			for _, st := range tc.steps {
				added = nil
				if st.escrow {
					envs, raws := escrowEnvs(st.seqs)
					added = b.escrow(envs, raws)
					continue
				}
				var ids []escrowID
				for _, s := range st.seqs {
					ids = append(ids, escrowID{Nonce: 7, Seq: s})
				}
				if err := b.release(ids); err != nil {
					t.Fatal(err)
				}
			}
			var held, early []int64
			for _, env := range b.held {
				held = append(held, env.Seq)
			}
			for s := int64(0); s < 10; s++ {
				if b.early[escrowID{7, s}] {
					early = append(early, s)
				}
			}
			if !reflect.DeepEqual(held, tc.held) || !reflect.DeepEqual(early, tc.early) {
				t.Errorf("held %v, early releases %v; want %v, %v", held, early, tc.held, tc.early)
			}
			if len(b.heldRaws) != len(b.held) {
				t.Errorf("%d raws for %d held elements", len(b.heldRaws), len(b.held))
			}
			if got := int64(b.earliest()); got != tc.earliest {
				t.Errorf("earliest = %d; want %d", got, tc.earliest)
			}
			if len(added) != tc.wantAdded {
				t.Errorf("the last step added %d; want %d", len(added), tc.wantAdded)
			}
		})
	}
}

// TestEscrowBookReleaseOfDrained: a release of an element the drain ran
// is refused with the cause.
func TestEscrowBookReleaseOfDrained(t *testing.T) {
	b := newEscrowBook()
	b.drained[escrowID{7, 2}] = true
	if err := b.release([]escrowID{{7, 1}}); err != nil {
		t.Errorf("release of an element not drained: %v; want nil", err)
	}
	if err := b.release([]escrowID{{7, 2}}); err != errDrainedTwice {
		t.Errorf("release of a drained element: %v; want errDrainedTwice", err)
	}
}

func TestReleaseRecordRoundTrip(t *testing.T) {
	ids := []escrowID{{1, 1}, {1<<63 + 5, 1 << 40}, {3, 0}}
	rec := releaseRecord(ids)
	if rec[0] != recordRelease {
		t.Fatalf("kind %d; want %d", rec[0], recordRelease)
	}
	got, err := decodeRelease(rec[1:])
	if err != nil || !reflect.DeepEqual(got, ids) {
		t.Errorf("decodeRelease = %v, %v; want %v", got, err, ids)
	}
	if _, err := decodeRelease(rec[1 : len(rec)-1]); err == nil {
		t.Error("a record cut short decoded without error")
	}
}

// TestDrainFiring: the drain timer of every hold fires after any event time
// a watermark reaches before the end of input (the year 3000 here), no
// later than the global window's end, and at another instant for another
// hold (see drainFiring).
func TestDrainFiring(t *testing.T) {
	year3000 := mtime.FromTime(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	seen := map[mtime.Time]mtime.Time{}
	for _, hold := range []mtime.Time{mtime.MinTimestamp, -1, 0, 1, 2, mtime.Now(), mtime.Now() + 1, year3000, mtime.EndOfGlobalWindowTime} {
		f := drainFiring(hold)
		if f <= year3000 || f > mtime.EndOfGlobalWindowTime {
			t.Errorf("drainFiring(%d) = %d; want in (%d, %d]", hold, f, year3000, mtime.EndOfGlobalWindowTime)
		}
		if other, ok := seen[f]; ok {
			t.Errorf("holds %d and %d fire at the same instant %d", other, hold, f)
		}
		seen[f] = hold
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
		switch rec[0] {
		case recordEscrow:
			entry, err := state.DecodeEntry(rec[1:])
			if err != nil {
				t.Fatal(err)
			}
			escrowed.escrow(entry.Envelopes, entry.Raws)
		case recordRelease:
			ids, err := decodeRelease(rec[1:])
			if err != nil {
				t.Fatal(err)
			}
			if err := escrowed.release(ids); err != nil {
				t.Fatal(err)
			}
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

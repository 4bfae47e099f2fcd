package stream

import (
	"context"
	"fmt"
	"slices"
	"testing"

	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"

	"github.com/asyncbeam/asyncbeam/state"
)

// bags is one key's bag state in memory. Only bag state is served.
type bags struct {
	beamstate.Provider
	entries map[string][]any
	// reversed reads each bag last entry first: Beam promises no order.
	reversed bool
}

func (b *bags) ReadBagState(id string) ([]any, []beamstate.Transaction, error) {
	out := slices.Clone(b.entries[id])
	if b.reversed {
		slices.Reverse(out)
	}
	return out, nil, nil
}

func (b *bags) WriteBagState(t beamstate.Transaction) error {
	if b.entries == nil {
		b.entries = map[string][]any{}
	}
	b.entries[t.Key] = append(b.entries[t.Key], t.Val)
	return nil
}

func (b *bags) ClearBagState(t beamstate.Transaction) error {
	delete(b.entries, t.Key)
	return nil
}

// summaries counts the entries of the pending bag that hold a queue
// summary.
func (b *bags) summaries(t *testing.T) int {
	t.Helper()
	n := 0
	for _, raw := range b.entries[PendingStateID] {
		entry, err := state.DecodeEntry(raw.([]byte))
		if err != nil {
			t.Fatal(err)
		}
		if entry.Summary != nil {
			n++
		}
	}
	return n
}

// keyOf is the key's state in b, as a callback sees it.
func keyOf(b *bags) keyState {
	pending, queued := beamstate.MakeBagState[[]byte](PendingStateID), beamstate.MakeBagState[[]byte](QueuedStateID)
	return keyState{bag: &pending, queue: &queued, sp: b}
}

// readView is a bundle's first view of the key, read from its bags.
func readView(t *testing.T, ks keyState) *keyView {
	t.Helper()
	v := &keyView{owner: "a", key: "a", byID: map[state.ElementID]*pending{}}
	if err := (&Path{}).readPending(context.Background(), ks, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestQueueSummariesStayBounded: a callback that starts queued elements
// without committing any (room freed by other keys) appends a new queue
// summary to the pending bag; superseded ones are compacted away once they
// outnumber the elements, so a key with a long backlog does not read a
// growing bag at each callback. That holds whether the summaries were read
// back (one bundle each) or written by this bundle's own earlier callbacks
// of the key (one bundle for all).
func TestQueueSummariesStayBounded(t *testing.T) {
	for _, oneBundle := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneBundle=%v", oneBundle), func(t *testing.T) {
			b := &bags{}
			ks := keyOf(b)
			most := 0
			var v *keyView
			for i := 1; i <= 30; i++ {
				if v == nil || !oneBundle {
					v = readView(t, ks)
				}
				v.queue.Count, v.summaryChanged = int64(30-i), true
				if err := v.write(ks); err != nil {
					t.Fatal(err)
				}
				most = max(most, b.summaries(t))
			}
			if most > 9 {
				t.Errorf("the pending bag held up to %d queue summaries over 30 callbacks; want at most 9 (compacted at max(8, elements))", most)
			}
		})
	}
}

// TestNewestQueueSummaryWins: of the queue summaries in a key's pending bag
// the one written last counts, in whatever order the runner reads the bag
// (Beam does not promise one): each carries a serial number one above the
// summary it supersedes.
func TestNewestQueueSummaryWins(t *testing.T) {
	for _, reversed := range []bool{false, true} {
		t.Run(fmt.Sprintf("reversed=%v", reversed), func(t *testing.T) {
			b := &bags{}
			ks := keyOf(b)
			for _, count := range []int64{5, 4, 3} { // one bundle each, no compaction
				v := readView(t, ks)
				v.queue.Count, v.summaryChanged = count, true
				if err := v.write(ks); err != nil {
					t.Fatal(err)
				}
			}
			if n := b.summaries(t); n != 3 {
				t.Fatalf("the pending bag holds %d queue summaries, want 3 (the test needs them uncompacted)", n)
			}
			b.reversed = reversed
			if v := readView(t, ks); v.queue.Count != 3 {
				t.Errorf("the key's view reads a queue of %d elements, want 3 (the last summary written)", v.queue.Count)
			}
		})
	}
}

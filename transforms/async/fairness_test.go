package async

import (
	"reflect"
	"testing"
	"time"
)

// TestEvictedLateKeyCommits: a key whose callbacks come later than the stale
// period, and whose finished result another key's element evicts for room,
// commits at its second callback after the eviction: the call it starts
// again is spared by eviction until the key goes untouched for far longer,
// so its result is not thrown away in a loop.
func TestEvictedLateKeyCommits(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(1))
	f := h.stream()
	p, _ := h.c.Pool()
	book.open(gateID(name, "a", 1))
	h.process(f, "a", 1)
	h.waitFinished("a", 1)
	var committed []string
	callbacks := 0
	for i := 1; i <= 5 && len(committed) == 0; i++ {
		h.clock.Advance(h.c.StaleAfter() + time.Second) // a's callback comes late
		book.open(gateID(name, "b", i))
		h.process(f, "b", i) // b needs a's place
		if len(h.pendingOf("b", i)) > 0 {
			h.waitFinished("b", i)
			mustFire(t, h, f, "b") // commits b's element: its place frees
		}
		committed = mustFire(t, h, f, "a")
		callbacks++
		h.waitKey("a")
	}
	if want := []string{"a:1#0"}; !reflect.DeepEqual(committed, want) {
		t.Fatalf("after %d late callbacks a committed %v, want %v: its result was evicted again and again", callbacks, committed, want)
	}
	if callbacks > 2 {
		t.Errorf("a committed at its %d-th late callback, want at most its 2nd", callbacks)
	}
	if n := book.count(gateID(name, "a", 1)); n > 2 {
		t.Errorf("a's element was called %d times, want at most 2 (one eviction)", n)
	}
	if got := p.Held(); got > 1 {
		t.Errorf("places taken = %d, want at most WithMaxItemsHeld(1)", got)
	}
}

// TestQueuedKeyGetsFreedPlace: a key whose only element waits in the queue
// bag for room is not starved by a busy key that commits and accepts in its
// own ProcessElement, reusing every place it frees at once: a place freed
// while the queued key waits is kept for it, and its next callback starts
// its element. The busy key, waiting in turn, gets the next place.
func TestQueuedKeyGetsFreedPlace(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(1), WithMaxWait(0))
	f := h.stream()
	h.process(f, "b", 1)
	h.process(f, "w", 1) // no room: queued
	if got := len(h.st("w").queued()); got != 1 {
		t.Fatalf("w's queue holds %d elements, want 1", got)
	}
	mustFire(t, h, f, "w") // w looks for room while the pool is full
	callbacks := 0
	b := 1
	for i := 1; i <= 6; i++ {
		if len(h.pendingOf("b", b)) > 0 { // b's element runs: b commits it in its next ProcessElement
			book.open(gateID(name, "b", b))
			h.waitFinished("b", b)
		}
		b++
		h.process(f, "b", b)
		mustFire(t, h, f, "w")
		callbacks++
		if len(h.pendingOf("w", 1)) > 0 {
			break
		}
	}
	if len(h.pendingOf("w", 1)) == 0 {
		t.Fatalf("w's queued element did not start in %d of its callbacks while b committed and accepted at each of its own", callbacks)
	}
	if callbacks > 1 {
		t.Errorf("w's element started at its %d-th callback after a place freed, want its first", callbacks)
	}
	book.open(gateID(name, "w", 1))
	h.waitFinished("w", 1)
	if got, want := mustFire(t, h, f, "w"), []string{"w:1#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("commit of w = %v, want %v", got, want)
	}
	// b's element that found no room meanwhile gets the place w freed.
	mustFire(t, h, f, "b")
	if len(h.pendingOf("b", b)) == 0 {
		t.Errorf("b's queued element %d did not start at b's first callback after w's commit", b)
	}
}

// TestElementTakesPlaceKeptForGoneKey: a place kept for a key that waited
// for room and then went quiet past the stale period (it moved to another
// worker) is taken back by the first element that finds no room, which
// starts in it at once.
func TestElementTakesPlaceKeptForGoneKey(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(1), WithMaxWait(0))
	f := h.stream()
	h.process(f, "b", 1)
	h.process(f, "gone", 1) // no room: queued, and the key waits for a place
	if got := len(h.st("gone").queued()); got != 1 {
		t.Fatalf("gone's queue holds %d elements, want 1", got)
	}
	book.open(gateID(name, "b", 1))
	h.waitFinished("b", 1)
	mustFire(t, h, f, "b") // b's place frees, and is kept for gone
	p, _ := h.c.Pool()
	if p.Len() != 0 || !p.HasRoom(h.owner("gone")) || p.HasRoom(h.owner("m")) {
		t.Fatalf("before m: the pool holds %d tasks, a place kept for gone %v, room for m %v; want 0, true, false", p.Len(), p.HasRoom(h.owner("gone")), p.HasRoom(h.owner("m")))
	}
	h.clock.Advance(h.c.StaleAfter() + time.Second)
	h.process(f, "m", 1)
	if len(h.pendingOf("m", 1)) == 0 {
		t.Errorf("m's element did not start in the place kept for the key gone quiet (queued: %d)", len(h.st("m").queued()))
	}
}

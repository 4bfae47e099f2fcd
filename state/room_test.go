package state

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRoomQueue: freed places go to waiting owners first come, first
// served, one at a time; an owner that waits again keeps its turn, one that
// took its place waits behind the others; leaving gives back a kept place.
func TestRoomQueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		// ops: "wait o", "leave o", "take o", "keep o", "grant"; want is
		// what each op returned: the owner granted ("-" for nobody), or
		// true/false, or "" for ops without a result.
		ops, want []string
		kept      int // places kept at the end
	}{
		{"nobody waits", []string{"grant"}, []string{"-"}, 0},
		{"first come first served",
			[]string{"wait a", "wait b", "wait c", "grant", "grant", "grant", "grant"},
			[]string{"", "", "", "a", "b", "c", "-"}, 3},
		{"waiting again keeps the turn",
			[]string{"wait a", "wait b", "wait a", "grant", "grant"},
			[]string{"", "", "", "a", "b"}, 2},
		{"one place per owner at a time",
			[]string{"wait a", "grant", "wait a", "wait b", "grant", "grant"},
			[]string{"", "a", "", "", "b", "-"}, 2},
		{"taking the place, then waiting, queues behind",
			[]string{"wait a", "wait b", "grant", "take a", "wait a", "grant", "grant"},
			[]string{"", "", "a", "true", "", "b", "a"}, 2},
		{"take without a kept place",
			[]string{"wait a", "take a", "take b"},
			[]string{"", "false", "false"}, 0},
		{"a place is taken once",
			[]string{"wait a", "grant", "take a", "take a"},
			[]string{"", "a", "true", "false"}, 0},
		{"leaving gives the kept place back",
			[]string{"wait a", "grant", "leave a", "leave a"},
			[]string{"", "a", "true", "false"}, 0},
		{"leaving ends the turn",
			[]string{"wait a", "wait b", "leave a", "grant", "grant"},
			[]string{"", "", "false", "b", "-"}, 1},
		{"an unused place is kept again, and ends a new wait",
			[]string{"wait a", "grant", "take a", "wait a", "keep a", "wait b", "grant", "grant"},
			[]string{"", "a", "true", "", "", "", "b", "-"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newRoomQueue()
			for i, op := range tc.ops {
				verb, o, _ := strings.Cut(op, " ")
				got := ""
				switch verb {
				case "wait":
					q.wait(o)
				case "leave":
					got = fmt.Sprint(q.leave(o))
				case "take":
					got = fmt.Sprint(q.take(o))
				case "keep":
					q.keep(o)
				case "grant":
					got = "-"
					if g, ok := q.grant(); ok {
						got = g
					}
				}
				if got != tc.want[i] {
					t.Fatalf("op %d (%s) = %q, want %q", i, op, got, tc.want[i])
				}
			}
			if q.kept() != tc.kept {
				t.Errorf("places kept = %d, want %d", q.kept(), tc.kept)
			}
			if len(q.at) != q.waiting.Len() {
				t.Errorf("index holds %d owners, the queue %d", len(q.at), q.waiting.Len())
			}
		})
	}
}

// TestOwnerIdle: EvictIdle takes the work of an owner untouched since the
// cutoff, but of a spared one (back after an eviction) only once it is
// untouched for its spare period too.
func TestOwnerIdle(t *testing.T) {
	now := time.Unix(10_000, 0)
	cutoff := now.Add(-30 * time.Second)
	for _, tc := range []struct {
		name     string
		last     time.Duration // since its last touch
		spared   bool
		spareFor time.Duration
		idle     bool
	}{
		{"touched since the cutoff", 10 * time.Second, false, 0, false},
		{"untouched since the cutoff", time.Minute, false, 0, true},
		{"spared, touched since the cutoff", 10 * time.Second, true, 2 * time.Minute, false},
		{"spared, untouched since the cutoff", time.Minute, true, 2 * time.Minute, false},
		{"spared, untouched for its spare period", 2*time.Minute + time.Second, true, 2 * time.Minute, true},
	} {
		own := &owner{lastActive: now.Add(-tc.last), spared: tc.spared, spareFor: tc.spareFor}
		if got := own.idle(cutoff, now); got != tc.idle {
			t.Errorf("%s: idle = %v, want %v", tc.name, got, tc.idle)
		}
	}
}

// TestOwnerSpare: an owner back after an eviction is spared for twice as
// long as it was away, at most Gone.
func TestOwnerSpare(t *testing.T) {
	now := time.Unix(10_000, 0)
	for _, tc := range []struct {
		away, gone, want time.Duration
	}{
		{31 * time.Second, 5 * time.Minute, 62 * time.Second},
		{2 * time.Minute, 5 * time.Minute, 4 * time.Minute},
		{4 * time.Minute, 5 * time.Minute, 5 * time.Minute},
	} {
		own := &owner{lastActive: now.Add(-tc.away), lost: true}
		own.spare(now, tc.gone)
		if own.spareFor != tc.want || !own.spared || own.lost {
			t.Errorf("away %v, gone %v: spareFor %v (spared %v, lost %v), want %v (true, false)", tc.away, tc.gone, own.spareFor, own.spared, own.lost, tc.want)
		}
	}
}

// manualNow is a settable clock for a pool.
type manualNow struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualNow) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *manualNow) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func finishedWork(context.Context, int) ([]any, error) { return []any{"x"}, nil }

// TestFreedPlaceKeptForWaitingOwner: with every Hold place taken, a place
// freed while owners wait is kept for them in turn: another owner's Submit
// finds no room, the waiting owner's takes it, and the next place goes to
// the next owner waiting, the owner that took one waiting behind it.
func TestFreedPlaceKeptForWaitingOwner(t *testing.T) {
	ctx := context.Background()
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Hold: 2})
	a, _, _ := p.Submit(ctx, TaskKey{"busy", ElementID{ID: "1"}}, 0, Job{Work: finishedWork})
	b, _, _ := p.Submit(ctx, TaskKey{"busy", ElementID{ID: "2"}}, 0, Job{Work: finishedWork})
	if _, adm, _ := p.Submit(ctx, TaskKey{"w1", ElementID{ID: "1"}}, 0, Job{Work: finishedWork}); adm != NoRoom {
		t.Fatalf("Submit with every place taken: %v, want NoRoom", adm)
	}
	p.Waiting("w1", true)
	p.Waiting("w2", true)
	p.Remove(a)
	if _, adm, _ := p.Submit(ctx, TaskKey{"busy", ElementID{ID: "3"}}, 0, Job{Work: finishedWork}); adm != NoRoom {
		t.Errorf("another owner took the place freed while w1 waits (%v)", adm)
	}
	if p.HasRoom("busy") || p.HasRoom("w2") || !p.HasRoom("w1") {
		t.Errorf("HasRoom busy %v, w2 %v, w1 %v; want false, false, true", p.HasRoom("busy"), p.HasRoom("w2"), p.HasRoom("w1"))
	}
	if _, adm, _ := p.Submit(ctx, TaskKey{"w1", ElementID{ID: "1"}}, 0, Job{Work: finishedWork}); adm != Started {
		t.Fatalf("w1's Submit with a place kept for it: %v, want Started", adm)
	}
	if _, adm, _ := p.Submit(ctx, TaskKey{"w1", ElementID{ID: "2"}}, 0, Job{Work: finishedWork}); adm != NoRoom {
		t.Errorf("w1 took a second place (%v); one per owner at a time", adm)
	}
	p.Waiting("w1", true) // it still waits: behind w2
	p.Remove(b)
	if _, adm, _ := p.Submit(ctx, TaskKey{"w1", ElementID{ID: "2"}}, 0, Job{Work: finishedWork}); adm != NoRoom {
		t.Errorf("w1 took the place freed in w2's turn (%v)", adm)
	}
	if _, adm, _ := p.Submit(ctx, TaskKey{"w2", ElementID{ID: "1"}}, 0, Job{Work: finishedWork}); adm != Started {
		t.Errorf("w2's Submit in its turn: %v, want Started", adm)
	}
	if got := p.Held(); got != 2 {
		t.Errorf("places taken = %d, want 2 (Hold)", got)
	}
}

// TestWaitingTakesAFreePlace: an owner that begins to wait while a place is
// free has it kept at once; an owner that waits no more gives its kept place
// back, to the next owner waiting or to anyone.
func TestWaitingTakesAFreePlace(t *testing.T) {
	ctx := context.Background()
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1})
	p.Waiting("w", true)
	if _, adm, _ := p.Submit(ctx, TaskKey{"other", ElementID{ID: "1"}}, 0, Job{Work: finishedWork}); adm != NoRoom {
		t.Errorf("another owner took the free place w waits for (%v)", adm)
	}
	p.Waiting("v", true)
	p.Waiting("w", false)
	if !p.HasRoom("v") {
		t.Error("the place w gave back did not go to v, waiting next")
	}
	p.Waiting("v", false)
	if _, adm, _ := p.Submit(ctx, TaskKey{"other", ElementID{ID: "1"}}, 0, Job{Work: finishedWork}); adm != Started {
		t.Errorf("with nobody waiting the place is anyone's: %v, want Started", adm)
	}
}

// TestExistingKeepsThePlace: a waiting owner's Submit that finds its task
// exists already does not use the place kept for it.
func TestExistingKeepsThePlace(t *testing.T) {
	ctx := context.Background()
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Hold: 2})
	p.Submit(ctx, TaskKey{"w", ElementID{ID: "1"}}, 0, Job{Work: finishedWork})
	p.Waiting("w", true)
	if _, adm, _ := p.Submit(ctx, TaskKey{"w", ElementID{ID: "1"}}, 0, Job{Work: finishedWork}); adm != Existing {
		t.Fatalf("Submit of a known task: %v, want Existing", adm)
	}
	if _, adm, _ := p.Submit(ctx, TaskKey{"w", ElementID{ID: "2"}}, 0, Job{Work: finishedWork}); adm != Started {
		t.Errorf("w's next element: %v, want Started in the place kept for it", adm)
	}
}

// TestEvictIdleSparesReturnedOwner: an owner whose work EvictIdle took and
// that was touched after (a key whose callbacks come late) keeps the work it
// started again through later evictions while its touches come no further
// apart than twice the lateness it came back from; once it goes untouched
// that long (it moved away for good), its work goes, well before
// Config.Gone. An owner never touched again is not spared. The pool
// remembers the evicted owner for Gone, so the sparing outlives Forget.
func TestEvictIdleSparesReturnedOwner(t *testing.T) {
	ctx := context.Background()
	clock := &manualNow{now: time.Unix(1000, 0)}
	const stale = 30 * time.Second
	p := mustPool(t, Config{Parallelism: 2, Buffer: 4, Now: clock.Now, Forget: 4 * time.Second, Gone: 10 * time.Minute})
	late, _, _ := p.Submit(ctx, TaskKey{"late", ElementID{ID: "1"}}, 0, Job{Work: finishedWork})
	moved, _, _ := p.Submit(ctx, TaskKey{"moved", ElementID{ID: "1"}}, 0, Job{Work: finishedWork})
	wait(t, late)
	wait(t, moved)
	clock.advance(stale + time.Second)
	if got := p.EvictIdle(clock.Now().Add(-stale)); len(got) != 2 {
		t.Fatalf("first eviction took %d tasks, want 2 (both owners untouched)", len(got))
	}
	clock.advance(stale) // longer than Forget
	p.Touch("other", false)
	clock.advance(2 * time.Second) // forgetIdle runs at most once a second
	p.Touch("late", false)         // the late key's callback, 63 s after its last: it starts its element again
	again, adm, _ := p.Submit(ctx, TaskKey{"late", ElementID{ID: "1"}}, 0, Job{Work: finishedWork})
	if adm != Started {
		t.Fatalf("starting the late key's element again: %v", adm)
	}
	wait(t, again)
	for i := 0; i < 3; i++ {
		clock.advance(2 * stale)
		if got := p.EvictIdle(clock.Now().Add(-stale)); len(got) != 0 {
			t.Fatalf("eviction %d took %v; the late key came back and is spared", i+2, got)
		}
		p.Touch("late", false)
	}
	clock.advance(2 * time.Minute) // within twice its lateness, 126 s
	if got := p.EvictIdle(clock.Now().Add(-stale)); len(got) != 0 {
		t.Fatalf("eviction took %v within the spared key's spare period", got)
	}
	clock.advance(7 * time.Second) // untouched for 127 s: it moved away
	if got := p.EvictIdle(clock.Now().Add(-stale)); len(got) != 1 || got[0] != again {
		t.Errorf("after twice its lateness untouched, eviction took %v, want the spared key's task", got)
	}
	if got := p.Held(); got != 0 {
		t.Errorf("places taken = %d, want 0", got)
	}
}

// TestEvictIdleTakesKeptPlaces: the wait and the kept place of an owner
// gone untouched are taken by EvictIdle; the place goes to the next owner
// waiting.
func TestEvictIdleTakesKeptPlaces(t *testing.T) {
	ctx := context.Background()
	clock := &manualNow{now: time.Unix(1000, 0)}
	p := mustPool(t, Config{Parallelism: 1, Buffer: 1, Now: clock.Now})
	p.Waiting("moved", true) // the free place is kept for it
	clock.advance(time.Minute)
	p.Touch("next", false)
	p.Waiting("next", true)
	if got := p.EvictIdle(clock.Now().Add(-30 * time.Second)); len(got) != 0 {
		t.Errorf("EvictIdle returned tasks %v; the moved owner held none", got)
	}
	if p.HasRoom("moved") || !p.HasRoom("next") {
		t.Errorf("after eviction HasRoom moved %v, next %v; want false, true", p.HasRoom("moved"), p.HasRoom("next"))
	}
	if _, adm, _ := p.Submit(ctx, TaskKey{"next", ElementID{ID: "1"}}, 0, Job{Work: finishedWork}); adm != Started {
		t.Errorf("next's Submit: %v, want Started", adm)
	}
}

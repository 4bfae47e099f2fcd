package async

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/asyncbeam/asyncbeam/state"
)

// runSerial makes test names unique across -count runs: the gates and the
// recorded events are package variables keyed by name.
var runSerial atomic.Int64

func uniqueName(t *testing.T) string { return fmt.Sprintf("%s#%d", testName(t), runSerial.Add(1)) }

// TestRescheduledOnlyWhenWorkWasLost: on unbounded input a due retry and a
// queued element's first start are not rescheduled (EventRetrying and
// EventAccepted said where they come from); an element pending in bag
// state whose call a restart lost is, once, just before it starts again.
func TestRescheduledOnlyWhenWorkWasLost(t *testing.T) {
	name := uniqueName(t)
	h := newHarnessFailures(t, true, &gated{Name: name}, stringKey, WithListener(&recorder{Name: name}),
		WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(1), WithMaxWait(0),
		WithMaxAttempts(2), WithBackoff(FixedBackoff(time.Second)), WithCallbackFrequency(10*time.Second))
	f := h.stream()
	g := &gates{name: name, key: "a"}
	defer g.openRest(3)
	book.planErrors(gateID(name, "a", 1), errors.New("transient"))
	h.process(f, "a", 1)
	h.process(f, "a", 2) // no room: queued
	if q := h.st("a").queued(); len(q) != 1 {
		t.Fatalf("%d elements queued, want 1", len(q))
	}
	g.open(1)
	h.waitFinished("a", 1)
	mustFire(t, h, f, "a") // 1's retry is written back; 2 starts from the queue
	g.open(2)
	h.waitFinished("a", 2)
	if got, want := mustFire(t, h, f, "a"), []string{"a:2#0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("commit = %v, want %v", got, want)
	}
	h.clock.Advance(time.Second)
	mustFire(t, h, f, "a") // 1's retry is due
	h.waitFinished("a", 1)
	if got, want := mustFire(t, h, f, "a"), []string{"a:1#0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("commit = %v, want %v", got, want)
	}

	h.process(f, "a", 3)
	h.waitRunning("a", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := state.Reset(ctx); err != nil { // a restart: 3's call is lost
		t.Fatalf("Reset: %v", err)
	}
	mustFire(t, h, f, "a") // 3 starts again
	g.open(3)
	h.waitFinished("a", 3)
	if got, want := mustFire(t, h, f, "a"), []string{"a:3#0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("commit = %v, want %v", got, want)
	}

	for _, tc := range []struct {
		v    int
		want []string
	}{
		{1, []string{"accepted/0", "started/1", "retrying/1", "started/2", "succeeded/2", "committed/2"}},
		{2, []string{"accepted/0", "started/1", "succeeded/1", "committed/1"}},
	} {
		if got := trail(h, name, "a", tc.v); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("events of element %d = %v, want %v", tc.v, got, tc.want)
		}
	}
	// The lost call may have been cut before it began: its events end at
	// its first start, and the rest is the start again.
	got := trail(h, name, "a", 3)
	want := []string{"rescheduled/0", "started/1", "succeeded/1", "committed/1"}
	if len(got) < len(want) || !reflect.DeepEqual(got[len(got)-len(want):], want) || countOf(got, "rescheduled/0") != 1 {
		t.Errorf("events of element 3 = %v, want them to end with %v, rescheduled once", got, want)
	}
}

// TestBundleEvictedElementIsRescheduled: on bounded input an element
// evicted from its live bundle starts again after EventRescheduled.
func TestBundleEvictedElementIsRescheduled(t *testing.T) {
	name := uniqueName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithListener(&recorder{Name: name}))
	f := h.bundleFn()
	ctx := context.Background()
	emit := func(typex.EventTime, typex.Z) {}
	f.StartBundle(ctx, emit, nil)
	if err := f.ProcessElement(ctx, 0, "a", 1, emit, nil); err != nil {
		t.Fatal(err)
	}
	waitForCall(t, gateID(name, "a", 1))
	evictStale(t, h, 1)
	book.open(gateID(name, "a", 1))
	if err := f.FinishBundle(ctx, emit, nil); err != nil {
		t.Fatalf("FinishBundle: %v", err)
	}
	want := []string{"accepted/0", "started/1", "rescheduled/0", "started/1", "succeeded/1", "committed/1"}
	if got := trail(h, name, "a", 1); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

// gates opens the gates of one key's values, each once.
type gates struct {
	name   string
	key    any
	opened map[int]bool
}

func (g *gates) open(v int) {
	if g.opened == nil {
		g.opened = map[int]bool{}
	}
	if !g.opened[v] {
		g.opened[v] = true
		book.open(gateID(g.name, g.key, v))
	}
}

// openRest opens the gates of values 1 to n not yet opened.
func (g *gates) openRest(n int) {
	for v := 1; v <= n; v++ {
		g.open(v)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

package async

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/asyncbeam/asyncbeam/timers"
)

// openAll opens the gates of values 0..n-1 of key.
func openAll(name string, key any, n int) {
	for v := 0; v < n; v++ {
		book.open(gateID(name, key, v))
	}
}

func elems(key any, n int) []bundleElem {
	out := make([]bundleElem, n)
	for v := range out {
		out[v] = bundleElem{key: key, v: v, ts: mtime.FromMilliseconds(int64(1000 * (v + 1)))}
	}
	return out
}

// TestBundleEmitsEachResultWithItsTimestamp: every output comes out once,
// carrying the timestamp of its own element, whether it is emitted by a
// later element's ProcessElement or by FinishBundle.
func TestBundleEmitsEachResultWithItsTimestamp(t *testing.T) {
	h := newHarness(t, &gated{Name: t.Name()}, stringKey, WithParallelism(2))
	openAll(t.Name(), "a", 10)
	out, err := h.runBundle(h.bundleFn(), elems("a", 10))
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if len(out.outputs) != 10 {
		t.Fatalf("outputs = %v, want 10", out.outputs)
	}
	for v := 0; v < 10; v++ {
		o := fmt.Sprintf("a:%d#0", v)
		if got, want := out.stamps[o], mtime.FromMilliseconds(int64(1000*(v+1))); got != want {
			t.Errorf("output %s has timestamp %v, want its element's %v", o, got, want)
		}
	}
	if p, _ := h.c.pool(); p.Len() != 0 {
		t.Errorf("the pool holds %d tasks after FinishBundle, want 0", p.Len())
	}
}

// TestBundleHeldBoundsMemory: a bundle far larger than WithMaxItemsHeld
// completes, and the pool never holds more than that: ProcessElement waits
// for a place, emitting the bundle's results as they finish.
func TestBundleHeldBoundsMemory(t *testing.T) {
	h := newHarness(t, &gated{Name: t.Name()}, stringKey, WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(2))
	openAll(t.Name(), "a", 50)
	out, err := h.runBundle(h.bundleFn(), elems("a", 50))
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if len(out.outputs) != 50 {
		t.Errorf("%d outputs, want 50", len(out.outputs))
	}
	p, _ := h.c.pool()
	if got := p.PeakHeld(); got > 2 {
		t.Errorf("the pool held %d elements at once, want at most WithMaxItemsHeld(2)", got)
	}
}

// TestBundleOrderedPerKey: with WithOrdered each key's results come out in
// the order its elements were accepted, whatever order the calls finish in.
func TestBundleOrderedPerKey(t *testing.T) {
	name := t.Name()
	h := newHarness(t, &gated{Name: name}, stringKey, WithOrdered(), WithParallelism(8))
	var in []bundleElem
	for v := 0; v < 20; v++ {
		for _, k := range []string{"a", "b"} {
			in = append(in, bundleElem{key: k, v: v, ts: mtime.FromMilliseconds(int64(v))})
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	go func() {
		for _, v := range r.Perm(20) {
			for _, k := range []string{"a", "b"} {
				book.open(gateID(name, k, v))
				time.Sleep(time.Millisecond)
			}
		}
	}()
	out, err := h.runBundle(h.bundleFn(), in)
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	last := map[string]int{"a": -1, "b": -1}
	for _, o := range out.outputs {
		var k string
		var v int
		fmt.Sscanf(strings.Replace(o, ":", " ", 1), "%s %d", &k, &v)
		if v != last[k]+1 {
			t.Errorf("key %s emitted %d after %d; want acceptance order (outputs %v)", k, v, last[k], out.outputs)
			break
		}
		last[k] = v
	}
}

// TestBundleRetriesAndFailures: failed attempts retry in the pool; an element
// that fails for good goes to the failure output with its timestamp; the
// others are emitted.
func TestBundleRetriesAndFailures(t *testing.T) {
	h := newHarnessFailures(t, true, &gated{Name: t.Name()}, stringKey, WithMaxAttempts(2), WithBackoff(FixedBackoff(20*time.Millisecond)), WithParallelism(2))
	h.c.clock = timers.System{}
	for v := 0; v < 6; v++ {
		id := gateID(t.Name(), "a", v)
		book.mu.Lock()
		switch v {
		case 1:
			book.plan[id] = []error{errFlaky} // succeeds on the retry
		case 2:
			book.plan[id] = []error{errFlaky, errFlaky} // fails for good
		case 3:
			book.plan[id] = []error{Permanent(errFlaky)}
		}
		book.mu.Unlock()
		book.open(id)
	}
	out, err := h.runBundle(h.bundleFn(), elems("a", 6))
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if want := []string{"a:0#0", "a:1#0", "a:4#0", "a:5#0"}; !reflect.DeepEqual(sorted(out.outputs), want) {
		t.Errorf("outputs = %v, want %v", sorted(out.outputs), want)
	}
	kinds := map[string]int{}
	for _, fr := range out.failures {
		kinds[fmt.Sprintf("%s/%s/%d", fr.ValueText, fr.Kind, fr.Attempts)]++
	}
	if want := map[string]int{"2/error/2": 1, "3/permanent/1": 1}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("failures = %v, want %v", kinds, want)
	}
}

// TestBundleFinalFailureWithoutFailureOutputFailsBundle: without a failure
// output the bundle fails with the cause, so the runner retries it.
func TestBundleFinalFailureWithoutFailureOutputFailsBundle(t *testing.T) {
	h := newHarness(t, &gated{Name: t.Name()}, stringKey)
	id := gateID(t.Name(), "a", 0)
	book.planErrors(id, Permanent(fmt.Errorf("no such customer")))
	book.open(id)
	_, err := h.runBundle(h.bundleFn(), elems("a", 1))
	if err == nil || !strings.Contains(err.Error(), "no such customer") || !strings.Contains(err.Error(), "ParDoWithFailures") {
		t.Errorf("bundle error = %v, want the cause and a pointer to ParDoWithFailures", err)
	}
}

// TestBundleCopiesAreOneElement: copies of an element pending in the same
// bundle are one element: one call, one output.
func TestBundleCopiesAreOneElement(t *testing.T) {
	h := newHarness(t, &gated{Name: t.Name()}, stringKey)
	in := []bundleElem{{key: "a", v: 5}, {key: "a", v: 5}, {key: "b", v: 5}}
	go func() {
		time.Sleep(20 * time.Millisecond)
		book.open(gateID(t.Name(), "a", 5))
		book.open(gateID(t.Name(), "b", 5))
	}()
	out, err := h.runBundle(h.bundleFn(), in)
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if want := []string{"a:5#0", "b:5#0"}; !reflect.DeepEqual(sorted(out.outputs), want) {
		t.Errorf("outputs = %v, want %v (the same value under two keys is two elements)", sorted(out.outputs), want)
	}
	if n := book.count(gateID(t.Name(), "a", 5)); n != 1 {
		t.Errorf("the copied element ran %d times, want 1", n)
	}
}

// TestBundleFailedBundleReleasesItsWork: a bundle that never reached
// FinishBundle (it failed; the runner retries its input) has its calls
// cancelled and its places freed when the instance starts its next bundle.
func TestBundleFailedBundleReleasesItsWork(t *testing.T) {
	h := newHarness(t, &gated{Name: t.Name()}, stringKey)
	f := h.bundleFn()
	ctx := context.Background()
	emit := func(typex.EventTime, typex.Z) {}
	fail := func(typex.EventTime, Failure) {}
	f.StartBundle(ctx, emit, fail)
	if err := f.ProcessElement(ctx, 0, "a", 1, emit, fail); err != nil {
		t.Fatal(err)
	}
	p, _ := h.c.pool()
	task := p.ForOwner(f.run.id)[0]
	f.StartBundle(ctx, emit, fail) // the runner gave up on the first bundle
	select {
	case <-task.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the failed bundle's call was not cancelled")
	}
	if p.Len() != 0 || p.Buffered() != 0 {
		t.Errorf("after the failed bundle: %d tasks, %d places held; want 0, 0", p.Len(), p.Buffered())
	}
}

// TestBundleIdentityInFixedWindows: on the bundle path for fixed windows
// (moved to the global window), identity is (key, window, ID): copies of a
// value pending in one window are one element, copies in two windows two.
func TestBundleIdentityInFixedWindows(t *testing.T) {
	name := t.Name()
	h := newHarness(t, &gated{Name: name}, stringKey, WithParallelism(2))
	h.c.FixedWindow = 10 * time.Second
	f := h.bundleFn()
	at := func(s int) beam.EventTime { return mtime.FromMilliseconds(int64(s) * 1000) }
	in := []bundleElem{
		{"a", 1, at(1)}, {"a", 1, at(5)}, // one window: one element
		{"a", 1, at(15)}, // the next window: another
	}
	// The calls run once all three are accepted (two tasks), so the copy is
	// still pending when it comes.
	p, _ := h.c.pool()
	go func() {
		for deadline := time.Now().Add(10 * time.Second); p.Len() < 2 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		book.open(gateID(name, "a", 1))
	}()
	out, err := h.runBundle(f, in)
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if got := len(out.outputs); got != 2 {
		t.Errorf("outputs = %v, want 2: one per window", out.outputs)
	}
}

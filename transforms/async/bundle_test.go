package async

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
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
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithParallelism(2))
	openAll(testName(t), "a", 10)
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
	if p, _ := h.c.Pool(); p.Len() != 0 {
		t.Errorf("the pool holds %d tasks after FinishBundle, want 0", p.Len())
	}
}

// TestBundleHeldBoundsMemory: a bundle far larger than WithMaxItemsHeld
// completes, and the pool never holds more than that: ProcessElement waits
// for a place, emitting the bundle's results as they finish.
func TestBundleHeldBoundsMemory(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(2))
	openAll(testName(t), "a", 50)
	out, err := h.runBundle(h.bundleFn(), elems("a", 50))
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if len(out.outputs) != 50 {
		t.Errorf("%d outputs, want 50", len(out.outputs))
	}
	p, _ := h.c.Pool()
	if got := p.PeakHeld(); got > 2 {
		t.Errorf("the pool held %d elements at once, want at most WithMaxItemsHeld(2)", got)
	}
}

// TestBundleOrderedPerKey: with WithOrdered each key's results come out in
// the order its elements were accepted, whatever order the calls finish in.
func TestBundleOrderedPerKey(t *testing.T) {
	name := testName(t)
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
	h := newHarnessFailures(t, true, &gated{Name: testName(t)}, stringKey, WithMaxAttempts(2), WithBackoff(FixedBackoff(20*time.Millisecond)), WithParallelism(2))
	h.c.SetClock(timers.System{})
	for v := 0; v < 6; v++ {
		id := gateID(testName(t), "a", v)
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
	h := newHarness(t, &gated{Name: testName(t)}, stringKey)
	id := gateID(testName(t), "a", 0)
	book.planErrors(id, Permanent(fmt.Errorf("no such customer")))
	book.open(id)
	_, err := h.runBundle(h.bundleFn(), elems("a", 1))
	if err == nil || !strings.Contains(err.Error(), "no such customer") || !strings.Contains(err.Error(), "ParDoWithFailures") {
		t.Errorf("bundle error = %v, want the cause and a pointer to ParDoWithFailures", err)
	}
}

// TestBundleEqualRecordsAreSeparateElements: two input records with equal
// keys and values in one bundle are two elements, called and emitted each,
// as under a plain ParDo; the same value under another key is another
// element again. With WithIDFn, equal IDs pending together are one element.
func TestBundleEqualRecordsAreSeparateElements(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      []Option
		want      []string
		wantCalls int
	}{
		{"by value", nil, []string{"a:5#0", "a:5#0", "b:5#0"}, 2},
		{"by WithIDFn", []Option{WithIDFn(parity)}, []string{"a:5#0", "b:5#0"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := testName(t)
			h := newHarness(t, &gated{Name: name}, stringKey, tc.opts...)
			in := []bundleElem{{key: "a", v: 5}, {key: "a", v: 5}, {key: "b", v: 5}}
			p, _ := h.c.Pool()
			go func() { // the calls end once all three are accepted: the copy comes while the first is pending
				for deadline := time.Now().Add(10 * time.Second); p.Len() < len(tc.want) && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				book.open(gateID(name, "a", 5))
				book.open(gateID(name, "b", 5))
			}()
			out, err := h.runBundle(h.bundleFn(), in)
			if err != nil {
				t.Fatalf("bundle: %v", err)
			}
			if got := sorted(out.outputs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("outputs = %v, want %v", got, tc.want)
			}
			if n := book.count(gateID(name, "a", 5)); n != tc.wantCalls {
				t.Errorf("key a's value 5 was called %d times, want %d", n, tc.wantCalls)
			}
		})
	}
}

// TestBundleFailureReleasesItsWork: Beam Go never calls a failed bundle's
// instance again (no FinishBundle, no next StartBundle, no Teardown), so a
// bundle releases its work when it sees its failure: an error of its own, or
// a panic of an emit (how a failure of a later step of its stage reaches
// it). The panic goes on to the runner.
func TestBundleFailureReleasesItsWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(f *bundleFn, ctx context.Context) error
	}{
		{"its own error", func(f *bundleFn, ctx context.Context) error {
			return f.ProcessElement(ctx, 0, "a", 2, func(typex.EventTime, typex.Z) {}, nil) // panickyID: the bundle fails with the cause
		}},
		{"a later step fails: the emit panics", func(f *bundleFn, ctx context.Context) (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panicked: %v", r)
				}
			}()
			boom := func(typex.EventTime, typex.Z) { panic("downstream failed") }
			return f.FinishBundle(ctx, boom, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithIDFn(panicOnTwo))
			f := h.bundleFn()
			ctx := context.Background()
			discard := func(typex.EventTime, typex.Z) {}
			f.StartBundle(ctx, discard, nil)
			if err := f.ProcessElement(ctx, 0, "a", 1, discard, nil); err != nil {
				t.Fatal(err)
			}
			if err := f.ProcessElement(ctx, 0, "a", 3, discard, nil); err != nil { // its gate stays shut: it runs on
				t.Fatal(err)
			}
			// a:1 finishes only now, so that FinishBundle has it to emit
			// (finished before a:3's ProcessElement, it was emitted there, and
			// FinishBundle waited for a:3 for ever).
			book.open(gateID(testName(t), "a", 1))
			p, _ := h.c.Pool()
			tasks := p.ForOwner(f.path().BundleID())
			if err := tc.fail(f, ctx); err == nil {
				t.Fatal("the bundle did not fail")
			}
			for _, task := range tasks {
				select {
				case <-task.Done():
				case <-time.After(5 * time.Second):
					t.Fatal("the failed bundle's call was not cancelled")
				}
			}
			if p.Len() != 0 || p.Held() != 0 {
				t.Errorf("after the failed bundle: %d tasks, %d places held; want 0, 0", p.Len(), p.Held())
			}
		})
	}
}

func panicOnTwo(v int) string {
	if v == 2 {
		panic("no ID for two")
	}
	return fmt.Sprint(v)
}

// TestBundleEvictedWorkIsStartedAgain: a live bundle whose work was evicted
// (it showed no sign of life for the stale period: a slow step fused before
// it) starts that work again instead of committing without it, even when the
// wrapped fn returns nil on cancellation.
func TestBundleEvictedWorkIsStartedAgain(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &quietOnCancel{gated{Name: name}}, stringKey)
	f := h.bundleFn()
	ctx := context.Background()
	var outs []string
	emit := func(_ typex.EventTime, z typex.Z) { outs = append(outs, z.(string)) }
	f.StartBundle(ctx, emit, nil)
	if err := f.ProcessElement(ctx, 0, "a", 1, emit, nil); err != nil { // its gate is shut: the call runs
		t.Fatal(err)
	}
	waitForCall(t, gateID(name, "a", 1))
	evictStale(t, h, 1)
	book.open(gateID(name, "a", 1))
	if err := f.FinishBundle(ctx, emit, nil); err != nil {
		t.Fatalf("FinishBundle: %v", err)
	}
	if want := []string{"a:1#0"}; !reflect.DeepEqual(outs, want) {
		t.Errorf("outputs = %v, want %v: the evicted element must be called again, never committed without its output", outs, want)
	}
}

// TestBundleIdentityInWindows: on input in windows (carried through the
// global window), identity is (key, window, ID): the same value twice in one
// window is two elements (two records), and in another window a third; each
// output carries its element's window.
func TestBundleIdentityInWindows(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithParallelism(2))
	h.c.Carried, h.c.OutputType = true, &beam.EncodedType{T: reflect.TypeOf("")}
	h.c.PrepareCoders()
	f := h.bundleFn()
	vb := mustEncodeValue(t, h, 1)
	in := []windowed{{Window: "[0, 10000)", Value: vb}, {Window: "[0, 10000)", Value: vb}, {Window: "[10000, 20000)", Value: vb}}
	book.open(gateID(name, "a", 1))
	var got []string
	emit := func(ts typex.EventTime, z typex.Z) {
		w := z.(windowed)
		o, err := wrapped.Decode(beam.NewElementDecoder(reflect.TypeOf("")), w.Value)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%v in %s", o, w.Window))
	}
	ctx := context.Background()
	f.StartBundle(ctx, emit, nil)
	for i, v := range in {
		if err := f.ProcessElement(ctx, mtime.FromMilliseconds(int64(1000+10000*(i/2))), "a", v, emit, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.FinishBundle(ctx, emit, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"a:1#0 in [0, 10000)", "a:1#0 in [0, 10000)", "a:1#0 in [10000, 20000)"}
	if !reflect.DeepEqual(sorted(got), want) {
		t.Errorf("outputs = %v, want %v", sorted(got), want)
	}
}

func mustEncodeValue(t *testing.T, h *harness, v int) []byte {
	t.Helper()
	b, err := h.c.EncodeValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// quietOnCancel is gated, but returns nil, with no output, when its call is
// cancelled: a common way to write a fn, which must never read as success.
type quietOnCancel struct{ gated }

func (f *quietOnCancel) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	err := f.run(ctx, key, v, emit)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// deafToCancel is gated but ignores its context: an evicted call returns
// only when its gate opens.
type deafToCancel struct{ gated }

func (f *deafToCancel) ProcessElement(_ context.Context, key string, v int, emit func(string)) error {
	return f.run(context.Background(), key, v, emit)
}

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&quietOnCancel{})
	register.DoFn4x1[context.Context, string, int, func(string), error](&deafToCancel{})
	register.Function1x1(panicOnTwo)
}

// TestBundleOrderedFailureThenSameValue: with WithOrdered and a failure
// output, an element that fails for good while an earlier one still runs,
// followed by a record with the same value (which may take the failed one's
// ID), resolves in order: the bundle ends with every record accounted for.
func TestBundleOrderedFailureThenSameValue(t *testing.T) {
	name := testName(t)
	h := newHarnessFailures(t, true, &gated{Name: name}, stringKey, WithOrdered(), WithParallelism(4))
	book.planErrors(gateID(name, "a", 1), Permanent(errors.New("bad record")))
	book.open(gateID(name, "a", 1))
	f := h.bundleFn()
	ctx := context.Background()
	var outs []string
	var fails []Failure
	emit := func(_ typex.EventTime, z typex.Z) { outs = append(outs, z.(string)) }
	fail := func(_ typex.EventTime, fr Failure) { fails = append(fails, fr) }
	f.StartBundle(ctx, emit, fail)
	for _, v := range []int{0, 1} { // 0 runs (its gate shut); 1 fails for good
		if err := f.ProcessElement(ctx, 0, "a", v, emit, fail); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := h.c.Pool()
	for deadline := time.Now().Add(10 * time.Second); len(fails) == 0 && time.Now().Before(deadline); {
		if err := f.path().FlushNow(ctx, emit, fail); err != nil { // as the next ProcessElement would
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	book.planErrors(gateID(name, "a", 1)) // the next record of value 1 succeeds
	if err := f.ProcessElement(ctx, 0, "a", 1, emit, fail); err != nil {
		t.Fatal(err)
	}
	book.open(gateID(name, "a", 0))
	done := make(chan error, 1)
	go func() { done <- f.FinishBundle(ctx, emit, fail) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("FinishBundle hangs with %d elements unresolved (pool %d tasks)", f.path().Undecided(), p.Len())
	}
	if want := []string{"a:0#0", "a:1#0"}; !reflect.DeepEqual(outs, want) || len(fails) != 1 {
		t.Errorf("outputs %v, failures %d; want %v in order and one failure", outs, len(fails), want)
	}
}

// TestBundleOrderedEvictedHeadStartsAgain: with WithOrdered, a key's first
// element whose call was evicted, and returned only after later results of
// its key took every place, is started again without a place; the bundle
// goes on, in order, instead of waiting for room for ever.
func TestBundleOrderedEvictedHeadStartsAgain(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &deafToCancel{gated{Name: name}}, stringKey, WithOrdered(), WithParallelism(2), WithMaxItemsToBuffer(2), WithMaxItemsHeld(2))
	f := h.bundleFn()
	ctx := context.Background()
	var mu sync.Mutex
	var outs []string
	emit := func(_ typex.EventTime, z typex.Z) {
		mu.Lock()
		defer mu.Unlock()
		outs = append(outs, z.(string))
	}
	f.StartBundle(ctx, emit, nil)
	if err := f.ProcessElement(ctx, 0, "a", 1, emit, nil); err != nil { // its gate is shut: the call runs
		t.Fatal(err)
	}
	waitForCall(t, gateID(name, "a", 1))
	evictStale(t, h, 1)
	for v := 2; v <= 4; v++ {
		book.open(gateID(name, "a", v))
	}
	for v := 2; v <= 3; v++ { // they take both places, and wait behind a:1
		if err := f.ProcessElement(ctx, 0, "a", v, emit, nil); err != nil {
			t.Fatal(err)
		}
	}
	go func() { // the evicted call returns while a:4 waits for room
		time.Sleep(50 * time.Millisecond)
		book.open(gateID(name, "a", 1))
	}()
	done := make(chan error, 1)
	go func() { done <- f.ProcessElement(ctx, 0, "a", 4, emit, nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ProcessElement of a:4: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ProcessElement of a:4 still waits for room after 10 s: the evicted a:1 was never started again, and a:2 and a:3 hold every place behind it")
	}
	if err := f.FinishBundle(ctx, emit, nil); err != nil {
		t.Fatalf("FinishBundle: %v", err)
	}
	if want := []string{"a:1#0", "a:2#0", "a:3#0", "a:4#0"}; !reflect.DeepEqual(outs, want) {
		t.Errorf("outputs = %v, want %v", outs, want)
	}
	if got := book.count(gateID(name, "a", 1)); got != 2 {
		t.Errorf("a:1 was called %d times, want 2 (the evicted call, and once more)", got)
	}
}

// TestBundleEvictionKeepsFailedAttempts: attempts that failed before an
// eviction count toward WithMaxAttempts after it: an element evicted while
// it waits for its retry is not given a fresh count by being started again.
func TestBundleEvictionKeepsFailedAttempts(t *testing.T) {
	name := testName(t)
	h := newHarnessFailures(t, true, &gated{Name: name}, stringKey, WithMaxAttempts(2), WithBackoff(FixedBackoff(100*time.Hour)))
	f := h.bundleFn()
	ctx := context.Background()
	var mu sync.Mutex
	var outs []string
	var fails []Failure
	emit := func(_ typex.EventTime, z typex.Z) { mu.Lock(); outs = append(outs, z.(string)); mu.Unlock() }
	fail := func(_ typex.EventTime, fr Failure) { mu.Lock(); fails = append(fails, fr); mu.Unlock() }
	id := gateID(name, "a", 1)
	book.planErrors(id, errors.New("first attempt fails"), errors.New("second attempt fails"))
	book.open(id)
	f.StartBundle(ctx, emit, fail)
	if err := f.ProcessElement(ctx, 0, "a", 1, emit, fail); err != nil {
		t.Fatal(err)
	}
	p, _ := h.c.Pool()
	deadline := time.Now().Add(10 * time.Second)
	for { // the first attempt failed; the task waits 100 hours for its second
		ts := p.ForOwner(f.path().BundleID())
		if len(ts) == 1 && ts[0].Attempts() == 1 && ts[0].Status() == state.Waiting { // Waiting after an attempt: for the retry
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not come to wait for its retry (attempts %v)", book.attempts(id))
		}
		time.Sleep(time.Millisecond)
	}
	evictStale(t, h, 1)
	done := make(chan error, 1)
	go func() { done <- f.FinishBundle(ctx, emit, fail) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("FinishBundle: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("FinishBundle still waits after 10 s: the element started again with a fresh count and waits 100 hours for a third attempt (attempts %v)", book.attempts(id))
	}
	if len(outs) != 0 || len(fails) != 1 {
		t.Fatalf("outputs %v, failures %v: want none and one", outs, fails)
	}
	if got, want := fails[0].Attempts, 2; got != want {
		t.Errorf("the failure record counts %d attempts, want %d (calls %v)", got, want, book.attempts(id))
	}
}

// TestBoundedDoFnKeyedWhenRecordsMustMeet: bounded input takes the
// stateless DoFn, unless WithOrdered or WithIDFn needs a key's records in
// one bundle at a time (the keyed variant: its declared state makes runners
// group by key), so that copies of one element meet.
func TestBoundedDoFnKeyedWhenRecordsMustMeet(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	col := beam.Create(s, 1, 2, 3)
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"defaults", nil, "*async.bundleFn"},
		{"WithOrdered", []Option{WithOrdered()}, "*async.keyedBundleFn"},
		{"WithIDFn", []Option{WithIDFn(parity)}, "*async.keyedBundleFn"},
	} {
		h := newHarness(t, &gated{Name: testName(t)}, stringKey, tc.opts...)
		if got := fmt.Sprintf("%T", chooseDoFn(h.c, col)); got != tc.want {
			t.Errorf("%s: bounded input takes %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestBundleOrderedEvictedKeepsTheBound: with WithOrdered, elements evicted
// and started again hold places as new ones do, but for each key's earliest
// (started without one): the pool holds at most WithMaxItemsHeld plus one
// per such key.
func TestBundleOrderedEvictedKeepsTheBound(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &quietOnCancel{gated{Name: name}}, stringKey, WithOrdered(), WithParallelism(2), WithMaxItemsToBuffer(2), WithMaxItemsHeld(2))
	f := h.bundleFn()
	ctx := context.Background()
	var mu sync.Mutex
	var outs []string
	emit := func(_ typex.EventTime, z typex.Z) { mu.Lock(); outs = append(outs, z.(string)); mu.Unlock() }
	f.StartBundle(ctx, emit, nil)
	for v := 1; v <= 2; v++ { // both run at shut gates, holding both places
		if err := f.ProcessElement(ctx, 0, "a", v, emit, nil); err != nil {
			t.Fatal(err)
		}
		waitForCall(t, gateID(name, "a", v))
	}
	p := evictStale(t, h, 2)
	deadline := time.Now().Add(10 * time.Second)
	for { // both calls return on their cancellation: interrupted, to start again
		n := f.path().Finished()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d evicted calls returned, want 2", n)
		}
		time.Sleep(time.Millisecond)
	}
	peak := 0
	done := make(chan error, 1)
	go func() {
		for _, k := range []string{"c", "d"} { // their gates are shut too
			if err := f.ProcessElement(ctx, 0, k, 1, emit, nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		peak = max(peak, p.Len())
	}
	for _, g := range []string{gateID(name, "a", 1), gateID(name, "a", 2), gateID(name, "c", 1), gateID(name, "d", 1)} {
		book.open(g)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := f.FinishBundle(ctx, emit, nil); err != nil {
		t.Fatalf("FinishBundle: %v", err)
	}
	if peak > 3 {
		t.Errorf("the pool held %d tasks at once, want at most 3 (WithMaxItemsHeld 2, plus key a's earliest, started again without a place)", peak)
	}
	var a []string
	for _, o := range outs {
		if strings.HasPrefix(o, "a:") {
			a = append(a, o)
		}
	}
	if want := []string{"a:1#0", "a:2#0"}; !reflect.DeepEqual(a, want) || len(outs) != 4 {
		t.Errorf("outputs = %v, want 4 with key a's in order %v", outs, want)
	}
}

// evictStale lets an hour pass on the harness's clock and evicts the work
// of every owner idle since (as a bundle that needs room would), checking
// that want tasks went; it returns the pool.
// waitForCall waits until the call of id has begun: a test that evicts a
// running call must not evict it while it still waits for its slot or its
// gate (it would never be called, and the test would test nothing).
func waitForCall(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); book.count(id) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the call of %s did not begin", id)
		}
	}
}

func evictStale(t *testing.T, h *harness, want int) *state.Pool {
	t.Helper()
	p, _ := h.c.Pool()
	h.clock.Advance(time.Hour)
	if n := len(p.EvictIdle(h.clock.Now().Add(-time.Minute))); n != want {
		t.Fatalf("evicted %d tasks, want %d", n, want)
	}
	return p
}

// retryIfCalls counts the calls of the retry predicates below.
var retryIfCalls atomic.Int64

func neverRetry(error) bool { retryIfCalls.Add(1); return false }

func retryPanics(error) bool { retryIfCalls.Add(1); panic("predicate broke") }

// TestBundleRetryDecidedOnce: on bounded input the retry predicate is asked
// once per failed attempt, by the worker's retry policy, and its answer is
// final: the failure record is not decided a second time. A predicate that
// panics ends the retries, and the record says why.
func TestBundleRetryDecidedOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		retryIf  func(error) bool
		wantText string
	}{
		{"says no", neverRetry, "flaky backend"},
		{"panics", retryPanics, "the WithRetryIf function panicked: predicate broke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessFailures(t, true, &gated{Name: testName(t)}, stringKey, WithMaxAttempts(5), WithRetryIf(tc.retryIf), WithBackoff(FixedBackoff(0)))
			h.c.SetClock(timers.System{})
			id := gateID(testName(t), "a", 0)
			book.planErrors(id, errFlaky, errFlaky)
			book.open(id)
			retryIfCalls.Store(0)
			out, err := h.runBundle(h.bundleFn(), elems("a", 1))
			if err != nil {
				t.Fatalf("bundle: %v", err)
			}
			if got := retryIfCalls.Load(); got != 1 {
				t.Errorf("retry predicate called %d times, want 1 (one failed attempt)", got)
			}
			if len(out.failures) != 1 {
				t.Fatalf("failure records = %d, want 1", len(out.failures))
			}
			if fr := out.failures[0]; fr.Attempts != 1 || !strings.Contains(fr.Error, tc.wantText) {
				t.Errorf("failure = attempts %d, error %q; want 1, containing %q", fr.Attempts, fr.Error, tc.wantText)
			}
		})
	}
}

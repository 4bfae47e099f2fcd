package async

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// recorder is a Listener that keeps the events it sees per Name, so that a
// test can read what the listener rebuilt from JSON received.
type recorder struct{ Name string }

var recorded = struct {
	sync.Mutex
	events map[string][]Event
}{events: map[string][]Event{}}

func (r *recorder) OnEvent(e Event) {
	recorded.Lock()
	defer recorded.Unlock()
	recorded.events[r.Name] = append(recorded.events[r.Name], e)
}

// trail returns the types (with attempt numbers) of the events of the
// elements with value v of key, in order.
func trail(h *harness, name, key string, v int) []string {
	vb, _ := h.c.EncodeValue(v)
	base, _ := h.c.Identify(v, vb)
	id := fmt.Sprintf("%x", base)
	recorded.Lock()
	defer recorded.Unlock()
	var out []string
	for _, e := range recorded.events[name] {
		if e.KeyText == key && strings.HasPrefix(e.ElementID, id) { // the value's hash, then its place
			out = append(out, fmt.Sprintf("%s/%d", e.Type, e.Attempt))
		}
	}
	return out
}

// panicky is a Listener that panics on every event.
type panicky struct{}

func (*panicky) OnEvent(Event) { panic("listener exploded") }

// progressing reports progress twice, then emits.
type progressing struct{}

func (*progressing) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	if err := ReportProgress(ctx, 0.25, "a quarter"); err != nil {
		return err
	}
	if err := ReportProgress(ctx, 1, "done"); err != nil {
		return err
	}
	emit(fmt.Sprint(v))
	return nil
}

// valueID is an ID function: elements with equal values are one.
func valueID(v int) string { return fmt.Sprint(v) }

func init() {
	register.Function1x1(valueID)
	beam.RegisterType(reflect.TypeOf(recorder{}))
	beam.RegisterType(reflect.TypeOf(panicky{}))
	register.DoFn4x1[context.Context, string, int, func(string), error](&progressing{})
}

// TestEventsOfEachPath follows elements through success, a retry from bag
// state, a permanent failure, a duplicate and a cancellation, and checks the
// events each one produced, in order.
func TestEventsOfEachPath(t *testing.T) {
	name := testName(t)
	// By WithIDFn, so that a copy of a pending element is one element with
	// it (without an ID function every record is an element of its own).
	h := newHarnessFailures(t, true, &gated{Name: name}, reflect.TypeOf(""), WithListener(&recorder{Name: name}),
		WithMaxAttempts(3), WithBackoff(FixedBackoff(time.Second)), WithIDFn(valueID))
	f := h.stream()
	book.mu.Lock()
	book.plan[gateID(name, "k", 2)] = []error{errors.New("transient")}
	book.plan[gateID(name, "k", 3)] = []error{Permanent(errors.New("bad record"))}
	book.mu.Unlock()
	for v := 1; v <= 3; v++ {
		h.process(f, "k", v)
	}
	for book.count(gateID(name, "k", 1)) == 0 { // 1 runs: its events so far are fixed
		time.Sleep(time.Millisecond)
	}
	h.process(f, "k", 1) // a copy of a pending element
	h.process(f, "k", 4) // never opened: cancelled below
	for v := 1; v <= 3; v++ {
		book.open(gateID(name, "k", v))
	}
	h.waitFinished("k", 1)
	h.waitFinished("k", 2)
	h.waitFinished("k", 3)
	for book.count(gateID(name, "k", 4)) == 0 { // 4 has started: its cancel reaches a running call
		time.Sleep(time.Millisecond)
	}
	if _, err := h.fire(f, "k"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	if _, err := h.fire(f, "k"); err != nil { // 2's retry is due
		t.Fatal(err)
	}
	h.waitFinished("k", 2)
	h.dropValue("k", 4) // committed elsewhere, say
	if _, err := h.fire(f, "k"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		v    int
		want []string
	}{
		{1, []string{"accepted/0", "started/1", "accepted/0", "deduplicated/0", "succeeded/1", "committed/1"}},
		{2, []string{"accepted/0", "started/1", "retrying/1", "started/2", "succeeded/2", "committed/2"}},
		{3, []string{"accepted/0", "started/1", "failed/1"}},
		{4, []string{"accepted/0", "started/1", "cancelled/1"}},
	}
	for _, tc := range tests {
		if got := trail(h, name, "k", tc.v); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("events of element %d = %v, want %v", tc.v, got, tc.want)
		}
	}
	recorded.Lock()
	defer recorded.Unlock()
	for _, e := range recorded.events[name] {
		switch {
		case e.Transform != "test" || e.Key != "k" || e.Time.IsZero():
			t.Errorf("event %+v lacks its transform, key or time", e)
		case e.Type == EventRetrying && (e.Delay != time.Second || e.Kind != KindError || !strings.Contains(e.Error, "transient")):
			t.Errorf("retrying event %+v; want delay 1s, kind %s, the error", e, KindError)
		case e.Type == EventFailed && (e.Kind != KindPermanent || !strings.Contains(e.Error, "bad record")):
			t.Errorf("failed event %+v; want kind %s and the error", e, KindPermanent)
		}
	}
}

// TestLocalRetryEvents: with bounded input the retry happens in the pool,
// and its event comes from there.
func TestLocalRetryEvents(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, reflect.TypeOf(""), WithListener(&recorder{Name: name}),
		WithMaxAttempts(2), WithBackoff(FixedBackoff(time.Millisecond)))
	book.planErrors(gateID(name, "k", 1), errors.New("transient"))
	book.open(gateID(name, "k", 1))
	if out, err := h.runBundle(h.bundleFn(), []bundleElem{{key: "k", v: 1}}); err != nil || len(out.outputs) != 1 {
		t.Fatalf("bundle = %v, %v; want one output", out.outputs, err)
	}
	want := []string{"accepted/0", "started/1", "retrying/1", "started/2", "succeeded/2", "committed/2"}
	if got := trail(h, name, "k", 1); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

// TestListenerPanicsAreContained: a listener that always panics changes
// nothing about the outputs, and its panics are counted.
func TestListenerPanicsAreContained(t *testing.T) {
	h := newHarness(t, &jittery{}, reflect.TypeOf(""), WithListener(&panicky{}))
	f := h.stream()
	for v := 0; v < 5; v++ {
		h.process(f, "k", v)
	}
	h.waitKey("k")
	hub := h.c.Events()
	out, err := h.fire(f, "k")
	if err != nil || len(out) != 5 {
		t.Errorf("commit with a panicking listener = %v, %v; want 5 outputs", out, err)
	}
	// accepted, started, succeeded and committed for each element.
	n := hub.Panics.Load()
	if unpublished, _ := hub.Published.Take(0, []int64{n}); n != 20 || unpublished[0] != 0 {
		t.Errorf("panics counted = %d (%d not published), want 20 (all published)", n, unpublished[0])
	}
}

// TestProgressReachesListenerAndTask checks ReportProgress from inside a call
// and its errors outside one.
func TestProgressReachesListenerAndTask(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &progressing{}, reflect.TypeOf(""), WithListener(&recorder{Name: name}))
	f := h.stream()
	h.process(f, "k", 7)
	h.waitKey("k")
	p, _ := h.c.Pool()
	tasks := p.ForOwner(h.owner("k"))
	if len(tasks) != 1 {
		t.Fatalf("%d tasks, want 1", len(tasks))
	}
	if fraction, reports := tasks[0].Progress(); fraction != 1 || reports != 2 {
		t.Errorf("task progress = %v after %d reports, want 1 after 2", fraction, reports)
	}
	recorded.Lock()
	var got []string
	for _, e := range recorded.events[name] {
		if e.Type == EventProgress {
			got = append(got, fmt.Sprintf("%v %s", e.Progress, e.Details))
		}
	}
	recorded.Unlock()
	if want := []string{"0.25 a quarter", "1 done"}; !reflect.DeepEqual(got, want) {
		t.Errorf("progress events = %v, want %v", got, want)
	}

	errTests := []struct {
		name     string
		ctx      context.Context
		fraction float64
		want     string
	}{
		{"not a call's context", context.Background(), 0.5, "not the context of a call"},
		{"above one", context.WithValue(context.Background(), worker.CallKey{}, worker.CallInfo{F: &h.c}), 1.5, "outside [0, 1]"},
		{"negative", context.WithValue(context.Background(), worker.CallKey{}, worker.CallInfo{F: &h.c}), -0.1, "outside [0, 1]"},
	}
	for _, tc := range errTests {
		if err := ReportProgress(tc.ctx, tc.fraction, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ReportProgress = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestTimingListener runs one element on the manual clock: 2 s running, 3 s
// until its commit. The timing written to the file says so.
func TestTimingListener(t *testing.T) {
	name := testName(t)
	path := filepath.Join(t.TempDir(), "timings.jsonl")
	h := newHarness(t, &gated{Name: name}, reflect.TypeOf(""), WithListener(&TimingListener{Path: path}))
	f := h.stream()
	h.process(f, "k", 1)
	for book.count(gateID(name, "k", 1)) == 0 {
		time.Sleep(time.Millisecond)
	}
	h.clock.Advance(2 * time.Second)
	book.open(gateID(name, "k", 1))
	h.waitFinished("k", 1)
	h.clock.Advance(3 * time.Second)
	if _, err := h.fire(f, "k"); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTimings(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d timings, want 1: %+v", len(got), got)
	}
	tm := got[0]
	want := []struct {
		what      string
		got, want any
	}{
		{"outcome", tm.Outcome, "committed"},
		{"attempts", tm.Attempts, 1},
		{"queued", tm.Queued, time.Duration(0)},
		{"running", tm.Running, 2 * time.Second},
		{"commit delay", tm.CommitDelay, 3 * time.Second},
		{"total", tm.Total, 5 * time.Second},
		{"key", tm.Key, "k"},
	}
	for _, w := range want {
		if w.got != w.want {
			t.Errorf("timing %s = %v, want %v", w.what, w.got, w.want)
		}
	}
}

// TestTimingListenerDropsStaleElements: elements whose commit this worker
// never sees (their key moved) are dropped once the listener is full.
func TestTimingListenerDropsStaleElements(t *testing.T) {
	l := &TimingListener{MaxInFlight: 3}
	if err := l.Setup(); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_800_000_000, 0)
	accept := func(id string, at time.Time) {
		l.OnEvent(Event{Type: EventAccepted, Transform: "t", KeyText: "k", ElementID: id, Time: at})
	}
	accept("old1", start)
	accept("old2", start)
	accept("fresh", start.Add(15*time.Minute))
	accept("new", start.Add(20*time.Minute)) // full: the two stale ones go
	tests := []struct {
		id   string
		kept bool
	}{{"old1", false}, {"old2", false}, {"fresh", true}, {"new", true}}
	for _, tc := range tests {
		if _, ok := l.inFlight[timingKey{"t", "k", tc.id}]; ok != tc.kept {
			t.Errorf("element %s kept = %v, want %v", tc.id, ok, tc.kept)
		}
	}
}

// BenchmarkTimingListenerFull: one element's events when the listener holds
// MaxInFlight entries, none stale. Each costs the same whatever MaxInFlight
// is (it once scanned every entry).
func BenchmarkTimingListenerFull(b *testing.B) {
	for _, held := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			l := &TimingListener{MaxInFlight: held}
			if err := l.Setup(); err != nil {
				b.Fatal(err)
			}
			now := time.Unix(1_800_000_000, 0)
			for i := 0; i < held; i++ {
				l.OnEvent(Event{Type: EventAccepted, Transform: "t", KeyText: "k", ElementID: strconv.Itoa(i), Time: now})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := "n" + strconv.Itoa(i)
				l.OnEvent(Event{Type: EventAccepted, Transform: "t", KeyText: "k", ElementID: id, Time: now})
				l.OnEvent(Event{Type: EventCommitted, Transform: "t", KeyText: "k", ElementID: id, Time: now})
			}
		})
	}
}

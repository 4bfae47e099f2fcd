package async

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/stream"
)

var stringKey = reflect.TypeOf("")

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

func mustFire(t *testing.T, h *harness, f *streamFn, key any) []string {
	t.Helper()
	out, err := h.fire(f, key)
	if err != nil {
		t.Fatalf("commit of key %v: %v", key, err)
	}
	return sorted(out)
}

func TestCommitBasic(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, stringKey)
	f := h.stream()
	h.process(f, "a", 1)
	if _, ok := h.tm("a").take(); !ok {
		t.Fatal("ProcessElement set no commit timer")
	}
	book.open(gateID(testName(t), "a", 1))
	h.waitFinished("a", 1)
	if got, want := mustFire(t, h, f, "a"), []string{"a:1#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("commit emitted %v, want %v", got, want)
	}
	if n := h.st("a").size(); n != 0 {
		t.Errorf("bag state holds %d entries after the commit, want 0", n)
	}
	if _, ok := h.tm("a").take(); ok {
		t.Error("a commit that left nothing re-armed its timer; a bounded pipeline could not end")
	}
	if got := mustFire(t, h, f, "a"); len(got) != 0 {
		t.Errorf("a second commit emitted %v, want nothing", got)
	}
}

// TestCommitTimerOnGrid: a quiet key's timer is set for when its call is
// expected to finish, on the commit grid (C / 4) that all keys share; a busy
// key (an element within the busy threshold of its last) has its bundles commit
// it, and its timer, a backstop, is set a backstop ahead on a quarter
// round, so that it does not fall due while the key is in a bundle;
// a key whose elements come further apart is quiet again; and that quiet
// key's timer, finding its call still running, comes back on the grid,
// however recent its element (TestBusyKeyTimerKeepsItsBackstop: a busy
// key's comes back at its backstop).
func TestCommitTimerOnGrid(t *testing.T) {
	const c = time.Second
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithCallbackFrequency(c))
	f := h.stream()
	p, _ := h.c.Pool()
	grid := timers.NewCadence(c).Grid
	if grid != c/4 {
		t.Fatalf("Grid(%v) = %v, want %v", c, grid, c/4)
	}
	h.process(f, "b", 1) // one finished call gives the pool a latency to expect
	h.waitRunning("b", 1)
	h.clock.Advance(20 * time.Millisecond)
	book.open(gateID(testName(t), "b", 1))
	h.waitFinished("b", 1)
	// A worker that has set timers for less than Cadence.Forget plans a
	// key it has not seen as busy (the newcomer rule of timers.Cadence.Plan); past that, as quiet.
	h.clock.Advance(timers.NewCadence(c).Forget)
	h.process(f, "a", 1)
	first, _ := h.tm("a").take()
	if want := timers.NextRound(h.clock.Now().Add(p.ExpectedLatency()), grid, 0); !first.Equal(want) {
		t.Errorf("a quiet key's element armed the timer at %v, want the next grid step after its expected call, %v", first, want)
	}
	h.clock.Advance(300 * time.Millisecond)
	h.process(f, "a", 2)
	second, _ := h.tm("a").take()
	if want := timers.NextRound(h.clock.Now().Add(900*time.Millisecond), timers.NewCadence(c).Grid, 0); !second.Equal(want) {
		t.Errorf("a busy key's timer is at %v, want the quarter round after its backstop (three gaps of 300ms), %v", second, want)
	}
	h.clock.Advance(2500 * time.Millisecond) // more than the busy threshold since its last element: quiet
	h.process(f, "a", 3)
	third, _ := h.tm("a").take()
	if want := timers.NextRound(h.clock.Now().Add(p.ExpectedLatency()), grid, 0); !third.Equal(want) {
		t.Errorf("a key %v after its last element armed the timer at %v, want the grid, %v", 2500*time.Millisecond, third, want)
	}
	h.clock.Advance(50 * time.Millisecond)
	if ahead := fireWhileRunning(t, h, f, "a").Sub(h.clock.Now()); ahead > grid+p.ExpectedLatency() {
		t.Errorf("a timer that found running work 50ms after the key's element re-armed %v ahead, want at most a grid step (%v) past the expected call", ahead, grid)
	}
	openAll(testName(t), "a", 4)
}

// TestLongCallLooksLessOften: the timer of a quiet key whose every element
// is in a call that has run a while comes back after a quarter of that run
// (timers.Cadence.Plan), and a call that hangs costs its key one look per
// period (C), not one per grid step (C/4); a fresh call of the key brings
// the grid back.
func TestLongCallLooksLessOften(t *testing.T) {
	const c = 100 * time.Millisecond
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithCallbackFrequency(c))
	f := h.stream()
	grid := timers.NewCadence(c).Grid
	defer openAll(name, "a", 3)
	h.process(f, "b", 1) // one finished call gives the pool a latency to expect
	h.waitRunning("b", 1)
	h.clock.Advance(10 * time.Millisecond)
	book.open(gateID(name, "b", 1))
	h.waitFinished("b", 1)
	h.process(f, "a", 1)
	h.tm("a").take()
	h.waitRunning("a", 1)
	var ran time.Duration // a's call's run on the pool's clock
	for _, step := range []struct {
		name        string
		ranAtLeast  time.Duration
		least, most time.Duration
	}{
		{"a call that has run 200ms", 200 * time.Millisecond, 50 * time.Millisecond, c + grid},
		{"a call that has run 400ms (four periods)", 400 * time.Millisecond, c, c + grid},
	} {
		h.clock.Advance(step.ranAtLeast - ran)
		ran = step.ranAtLeast
		ahead := fireWhileRunning(t, h, f, "a").Sub(h.clock.Now())
		if ahead <= step.least || ahead > step.most {
			t.Errorf("%s: its key's timer re-armed %v ahead, want more than %v and at most %v", step.name, ahead, step.least, step.most)
		}
	}
	h.clock.Advance(2500 * time.Millisecond) // quiet again: more than the busy threshold since its element
	h.process(f, "a", 2)
	h.tm("a").take()
	h.waitRunning("a", 2) // both of its elements in calls, one of them fresh
	// Under C + a grid step (where the hung call alone puts it), with room
	// for the fresh call to have run a while on a loaded machine.
	if ahead := fireWhileRunning(t, h, f, "a").Sub(h.clock.Now()); ahead >= c+grid {
		t.Errorf("with a fresh call beside the hung one, the key's timer re-armed %v ahead, want under %v: the fresh call's run sets the wait", ahead, c+grid)
	}
}

// TestLongCallWaitsForQueuedWork: a key with an element queued for room
// beside its long call keeps coming back on the grid, for the room to start
// it, whatever the call's run.
func TestLongCallWaitsForQueuedWork(t *testing.T) {
	const c = 100 * time.Millisecond
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithCallbackFrequency(c), WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(1), WithMaxWait(0))
	f := h.stream()
	grid := timers.NewCadence(c).Grid
	defer openAll(name, "a", 3)
	h.process(f, "a", 1)
	h.waitRunning("a", 1)
	h.clock.Advance(2500 * time.Millisecond) // quiet: more than the busy threshold since its element
	h.process(f, "a", 2)
	if q := h.st("a").queued(); len(q) != 1 {
		t.Fatalf("%d elements queued, want the second", len(q))
	}
	h.tm("a").take()
	h.clock.Advance(200 * time.Millisecond)
	if ahead := fireWhileRunning(t, h, f, "a").Sub(h.clock.Now()); ahead > 2*grid {
		t.Errorf("a key with an element queued beside a call of 2.7s re-armed %v ahead, want at most two grid steps (%v): the queued element needs the room when it comes", ahead, 2*grid)
	}
}

// fireWhileRunning fires key's timer while all its calls run: it emits
// nothing and re-arms; it returns the new timer.
func fireWhileRunning(t *testing.T, h *harness, f *streamFn, key string) time.Time {
	t.Helper()
	if got := mustFire(t, h, f, key); len(got) != 0 {
		t.Fatalf("commit emitted %v while every call runs, want nothing", got)
	}
	next, ok := h.tm(key).take()
	if !ok {
		t.Fatal("a timer that found running work did not re-arm")
	}
	return next
}

// TestBusyKeyTimerKeepsItsBackstop: the timer of a busy key (elements 250 ms
// apart, the last 300 ms ago) that finds work running sets another
// backstop, three mean gaps ahead, not a timer on the next grid step: under
// load such timers fall due while the key's bundles run. The backstop
// follows the mean gap, so one element that comes in a burst right after
// another pulls it in by a quarter of the difference, neither to the floor
// nor not at all.
func TestBusyKeyTimerKeepsItsBackstop(t *testing.T) {
	const c = time.Second
	const ms = time.Millisecond
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithCallbackFrequency(c))
	f := h.stream()
	h.process(f, "b", 1) // one finished call gives the pool a latency to expect
	book.open(gateID(testName(t), "b", 1))
	h.waitFinished("b", 1)
	h.process(f, "a", 1)
	h.clock.Advance(250 * ms)
	h.process(f, "a", 2)
	h.tm("a").take()
	h.clock.Advance(300 * ms)
	want := timers.NextRound(h.clock.Now().Add(750*ms), timers.NewCadence(c).Grid, 0)
	if got := fireWhileRunning(t, h, f, "a"); !got.Equal(want) {
		t.Errorf("a busy key's timer re-armed at %v, want its backstop three mean gaps (750ms) ahead, on a quarter round, %v", got, want)
	}
	h.clock.Advance(150 * ms)
	h.process(f, "a", 3) // 450 ms after the last: the mean is 300 ms
	h.tm("a").take()
	h.process(f, "a", 4) // in a burst, 0 ms after: the mean is 225 ms
	got, _ := h.tm("a").take()
	want = timers.NextRound(h.clock.Now().Add(675*ms), timers.NewCadence(c).Grid, 0)
	floor := timers.NextRound(h.clock.Now().Add(c/2), timers.NewCadence(c).Grid, 0)
	unmoved := timers.NextRound(h.clock.Now().Add(900*ms), timers.NewCadence(c).Grid, 0)
	if want.Equal(floor) || want.Equal(unmoved) {
		t.Fatalf("the test's instants do not tell the rules apart: %v, %v, %v", want, floor, unmoved)
	}
	if !got.Equal(want) {
		t.Errorf("after a burst the backstop is at %v, want three mean gaps (675ms) ahead, on a quarter round, %v (the floor: %v; a mean the burst left alone: %v)", got, want, floor, unmoved)
	}
	openAll(testName(t), "a", 5)
}

// TestTimerThenElementInOneBundle: when a bundle brings a key's timer
// before its element, the element still counts as the key's arrival (the
// pool's record moves to it), so that a key whose timers lead its bundles
// keeps a true mean gap.
func TestTimerThenElementInOneBundle(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithCallbackFrequency(time.Second))
	f := h.stream()
	p, _ := h.c.Pool()
	h.process(f, "a", 1)
	h.clock.Advance(time.Second)
	h.process(f, "a", 2)
	h.clock.Advance(2 * time.Second)
	f.StartBundle(context.Background(), nil, nil, nil)
	if err := f.OnTimer(context.Background(), h.st("a"), h.tm("a"), "a", beamtimers.Context{Family: f.Commit.Family}, h.emitter("a"), h.fail, nil); err != nil {
		t.Fatal(err)
	}
	ts := mtime.FromTime(h.clock.Now())
	if err := f.ProcessElement(context.Background(), ts, h.st("a"), h.tm("a"), "a", 3, h.emitter("a"), h.fail, nil); err != nil {
		t.Fatal(err)
	}
	_, got := p.Touch(h.owner("a"), false)
	if want := (state.Arrivals{Last: h.clock.Now(), Gaps: 2, Gap: 2 * time.Second, MeanGap: 1250 * time.Millisecond}); !got.Last.Equal(want.Last) || got.Gaps != want.Gaps || got.Gap != want.Gap || got.MeanGap != want.MeanGap {
		t.Errorf("the pool's arrivals after a timer and an element in one bundle = %+v, want %+v", got, want)
	}
	openAll(testName(t), "a", 4)
}

// TestCommitTimerAtMostAPeriodAhead: however slow the calls the pool has
// seen, a quiet key's timer is never set more than a period (plus a grid
// step) ahead.
func TestCommitTimerAtMostAPeriodAhead(t *testing.T) {
	const c = 100 * time.Millisecond
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithCallbackFrequency(c))
	f := h.stream()
	p, _ := h.c.Pool()
	h.process(f, "b", 1)
	h.waitRunning("b", 1)
	h.clock.Advance(3 * c) // b's call takes three periods on the pool's clock
	book.open(gateID(testName(t), "b", 1))
	h.waitFinished("b", 1)
	if got := p.ExpectedLatency(); got < 3*c {
		t.Fatalf("ExpectedLatency after a call of %v = %v, want at least that", 3*c, got)
	}
	h.clock.Advance(timers.NewCadence(c).Forget) // past the newcomers' start (the newcomer rule of timers.Cadence.Plan): a key not seen is quiet
	h.process(f, "a", 1)
	at, _ := h.tm("a").take()
	if ahead, most := at.Sub(h.clock.Now()), c+timers.NewCadence(c).Grid; ahead > most {
		t.Errorf("timer set %v ahead after calls of %v, want at most %v (a period and a grid step)", ahead, 3*c, most)
	}
	openAll(testName(t), "a", 2)
}

func TestCommitKeysIndependent(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, stringKey)
	f := h.stream()
	h.process(f, "a", 1)
	h.process(f, "b", 1)
	book.open(gateID(testName(t), "b", 1))
	h.waitFinished("b", 1)
	if got := mustFire(t, h, f, "a"); len(got) != 0 {
		t.Errorf("commit of key a emitted %v while a's element runs, want nothing", got)
	}
	if _, ok := h.tm("a").take(); !ok {
		t.Error("commit of a key with running work did not re-arm")
	}
	if got, want := mustFire(t, h, f, "b"), []string{"b:1#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("commit of key b = %v, want %v", got, want)
	}
	book.open(gateID(testName(t), "a", 1))
	h.waitFinished("a", 1)
	if got, want := mustFire(t, h, f, "a"), []string{"a:1#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("commit of key a = %v, want %v", got, want)
	}
}

func TestCommitSeveralOutputsAndFinishBundle(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t), Outputs: 3, Finish: true}, stringKey)
	f := h.stream()
	h.process(f, "a", 7)
	book.open(gateID(testName(t), "a", 7))
	h.waitFinished("a", 7)
	want := []string{"a:7#0", "a:7#1", "a:7#2", "finish"}
	if got := mustFire(t, h, f, "a"); !reflect.DeepEqual(got, want) {
		t.Errorf("commit = %v, want %v", got, want)
	}
}

// TestEqualRecordsAreSeparateElements: two input records with equal keys and
// values are two elements, as under a plain ParDo, whether the first is
// still pending when the second arrives or not: each is called and emitted.
func TestEqualRecordsAreSeparateElements(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, stringKey)
	f := h.stream()
	h.process(f, "a", 5)
	h.process(f, "a", 5) // pending at the same time as the first
	id := gateID(testName(t), "a", 5)
	book.open(id)
	h.waitFinished("a", 5)
	h.process(f, "a", 5) // after the first two finished (and were committed by this call)
	h.waitFinished("a", 5)
	got := mustFire(t, h, f, "a") // with what the third's ProcessElement committed
	if want := []string{"a:5#0", "a:5#0", "a:5#0"}; !reflect.DeepEqual(sorted(got), want) {
		t.Errorf("commits = %v, want %v", got, want)
	}
	if n := book.count(id); n != 3 {
		t.Errorf("the fn ran %d times for three equal records, want 3", n)
	}
	if n := h.st("a").size(); n != 0 {
		t.Errorf("bag state holds %d entries after the commit, want 0", n)
	}
}

// TestRetriedBundleTakesOverItsCalls: a bundle that fails after accepting an
// element leaves its call running; the runner retries the bundle with the
// same state and elements, which gives the element the same ID and place,
// so the retry takes the running call over instead of calling again. (The
// key has an element pending: a key whose state is empty starts a new
// incarnation in each try, and its retry calls again.)
func TestRetriedBundleTakesOverItsCalls(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey)
	f := h.stream()
	h.process(f, "a", 0) // pending throughout: its gate stays shut until the end
	st := h.st("a")
	before := &memState{bags: map[string][]any{}}
	for k, v := range st.bags {
		before.bags[k] = append([]any(nil), v...)
	}
	ts := mtime.FromTime(h.clock.Now())
	f.StartBundle(context.Background(), nil, nil, nil)
	if err := f.ProcessElement(context.Background(), ts, st, h.tm("a"), "a", 1, h.emitter("a"), h.fail, nil); err != nil {
		t.Fatal(err)
	}
	h.states["a"] = before // the bundle failed: its state writes are dropped
	g := h.stream()        // the runner retries it on another instance
	g.StartBundle(context.Background(), nil, nil, nil)
	if err := g.ProcessElement(context.Background(), ts, h.st("a"), h.tm("a"), "a", 1, h.emitter("a"), h.fail, nil); err != nil {
		t.Fatal(err)
	}
	book.open(gateID(name, "a", 1))
	book.open(gateID(name, "a", 0))
	h.waitFinished("a", 0)
	h.waitFinished("a", 1)
	if got, want := mustFire(t, h, g, "a"), []string{"a:0#0", "a:1#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("commit = %v, want %v", got, want)
	}
	if n := book.count(gateID(name, "a", 1)); n != 1 {
		t.Errorf("the fn ran %d times, want 1: the retried bundle's element should take over the running call", n)
	}
}

// TestStaleTaskIsNotTakenForANewElement: a task an earlier element left on
// this worker (committed elsewhere, after its key moved) is never taken for
// a later record, even one with an equal value and event time (or, with
// WithIDFn, an equal ID): the key's state emptied in between, so the new
// record belongs to a new incarnation of it, and is called.
func TestStaleTaskIsNotTakenForANewElement(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		v2   int
	}{
		{"equal value", nil, 1},
		{"equal ID, other value", []Option{WithIDFn(parity)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := testName(t)
			h := newHarness(t, &gated{Name: name}, stringKey, tc.opts...)
			f := h.stream()
			book.open(gateID(name, "a", 1))
			book.open(gateID(name, "a", 3))
			h.process(f, "a", 1)
			h.waitFinished("a", 1)
			h.dropValue("a", 1) // committed by another worker: this one keeps the finished task
			h.process(f, "a", tc.v2)
			h.waitFinished("a", tc.v2)
			want := []string{fmt.Sprintf("a:%d#0", tc.v2)}
			if got := mustFire(t, h, f, "a"); !reflect.DeepEqual(got, want) {
				t.Errorf("commit = %v, want %v", got, want)
			}
			if n := book.count(gateID(name, "a", tc.v2)); n != map[bool]int{true: 2, false: 1}[tc.v2 == 1] {
				t.Errorf("value %d was called %d times; the new record was not called", tc.v2, n)
			}
		})
	}
}

func TestSameValueUnderTwoKeysIsTwoElements(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, stringKey)
	f := h.stream()
	h.process(f, "a", 1)
	h.process(f, "b", 1)
	book.open(gateID(testName(t), "a", 1))
	book.open(gateID(testName(t), "b", 1))
	h.waitFinished("a", 1)
	h.waitFinished("b", 1)
	got := append(mustFire(t, h, f, "a"), mustFire(t, h, f, "b")...)
	if want := []string{"a:1#0", "b:1#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("commits = %v, want %v", got, want)
	}
}

func TestCustomIDFn(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithIDFn(parity))
	f := h.stream()
	h.process(f, "a", 2)
	h.process(f, "a", 4) // same parity: the same element
	h.process(f, "a", 3)
	book.open(gateID(testName(t), "a", 2))
	book.open(gateID(testName(t), "a", 3))
	h.waitFinished("a", 2)
	h.waitFinished("a", 3)
	if got, want := mustFire(t, h, f, "a"), []string{"a:2#0", "a:3#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("commit = %v, want %v", got, want)
	}
	if n := book.count(gateID(testName(t), "a", 4)); n != 0 {
		t.Errorf("element 4, a duplicate of 2 by ID, ran %d times", n)
	}
}

// TestRestartReschedules models a worker restart: the registry is reset, so
// the element in bag state is unknown locally; the commit starts it again and
// emits it once.
func TestRestartReschedules(t *testing.T) {
	for _, tc := range keyKinds("restart", "k", 42, point{1, 2}) {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.fn, tc.keyT)
			f := h.stream()
			h.process(f, tc.key, 1)
			name := tc.fn.(interface{ base() *gated }).base().Name
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := state.Reset(ctx); err != nil { // the running call is cancelled
				t.Fatalf("Reset: %v", err)
			}
			if got := mustFire(t, h, f, tc.key); len(got) != 0 {
				t.Fatalf("first commit after restart emitted %v, want nothing (just rescheduled)", got)
			}
			book.open(gateID(name, tc.key, 1))
			h.waitFinished(tc.key, 1)
			want := []string{fmt.Sprintf("%v:1#0", tc.key)}
			if got := mustFire(t, h, f, tc.key); !reflect.DeepEqual(got, want) {
				t.Errorf("commit after restart = %v, want %v", got, want)
			}
			// The first call may have been cancelled before it began.
			if n := book.count(gateID(name, tc.key, 1)); n < 1 || n > 2 {
				t.Errorf("calls = %d, want 1 or 2 (the rescheduled one, after the cancelled one)", n)
			}
		})
	}
}

func (g *gated) base() *gated { return g }

// keyKind is a gated fn over one key type, with a key of that type.
type keyKind struct {
	name string
	fn   any
	keyT reflect.Type
	key  any
}

// keyKinds gives string, int and struct keys, so that cancelling and
// restarting are checked for keys other than strings.
func keyKinds(prefix string, s string, i int, p point) []keyKind {
	return []keyKind{
		{"string key", &gated{Name: prefix + "-string"}, stringKey, s},
		{"int key", &gatedInt{gated{Name: prefix + "-int"}}, reflect.TypeOf(0), i},
		{"struct key", &gatedStruct{gated{Name: prefix + "-struct"}}, reflect.TypeOf(point{}), p},
	}
}

// TestStaleLocalWorkIsCancelled: the element left bag state (committed by
// another worker); this worker's call is cancelled and never emitted.
func TestStaleLocalWorkIsCancelled(t *testing.T) {
	for _, tc := range keyKinds("stale", "k", 7, point{3, 4}) {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.fn, tc.keyT)
			f := h.stream()
			h.process(f, tc.key, 1)
			h.process(f, tc.key, 2)
			// Another worker committed element 1: drop it from this key's state.
			h.dropValue(tc.key, 1)
			p, _ := h.c.Pool()
			before := p.Held()
			if got := mustFire(t, h, f, tc.key); len(got) != 0 {
				t.Errorf("commit emitted %v, want nothing", got)
			}
			if after := p.Held(); after != before-1 {
				t.Errorf("buffer places after cancelling the stale element = %d, want %d", after, before-1)
			}
			name := tc.fn.(interface{ base() *gated }).base().Name
			book.open(gateID(name, tc.key, 2))
			h.waitFinished(tc.key, 2)
			want := []string{fmt.Sprintf("%v:2#0", tc.key)}
			if got := mustFire(t, h, f, tc.key); !reflect.DeepEqual(got, want) {
				t.Errorf("commit = %v, want %v (the cancelled element must never be emitted)", got, want)
			}
		})
	}
}

// TestFullBufferQueuesAndRearmsEarly: elements that find no place (here
// WithMaxItemsHeld(1)) stay in bag state; the timer of a quiet key that
// leaves some of them queued comes back after the observed call latency, not
// a whole round later, and one that leaves only running work on the next
// step of the commit grid after it.
func TestFullBufferQueuesAndRearmsEarly(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(1), WithCallbackFrequency(10*time.Second))
	f := h.stream()
	p, _ := h.c.Pool()
	for v := 1; v <= 3; v++ {
		h.process(f, "a", v) // 2 and 3 find no room: they stay in bag state only
	}
	if got := p.Len(); got != 1 {
		t.Fatalf("tasks = %d, want 1 (WithMaxItemsHeld)", got)
	}
	if got := h.st("a").size(); got != 3 {
		t.Fatalf("bag state holds %d elements, want 3 (queued work is kept)", got)
	}
	h.waitRunning("a", 1)
	h.clock.Advance(time.Second) // a:1's call takes a second on the pool's clock
	// 3 runs until after the second commit.
	for v := 1; v <= 2; v++ {
		book.open(gateID(name, "a", v))
	}
	h.waitFinished("a", 1)
	h.clock.Advance(24 * time.Second) // no element for longer than the busy threshold: the key is quiet
	round := timers.NextRound(h.clock.Now(), 10*time.Second, 0)
	h.tm("a").take()
	if got, want := mustFire(t, h, f, "a"), []string{"a:1#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("first commit = %v, want %v", got, want)
	}
	next, ok := h.tm("a").take()
	if !ok {
		t.Fatal("commit with queued work did not re-arm")
	}
	if !next.Before(round) {
		t.Errorf("re-armed at the next round (%v ahead) with an element still queued; want sooner, from the observed call latency", next.Sub(h.clock.Now()))
	}
	h.waitFinished("a", 2) // the commit started the first queued element
	if got, want := mustFire(t, h, f, "a"), []string{"a:2#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("second commit = %v, want %v", got, want)
	}
	step := timers.NextRound(h.clock.Now().Add(p.ExpectedLatency()), timers.NewCadence(10*time.Second).Grid, 0)
	if next, _ := h.tm("a").take(); step.Sub(next).Abs() >= time.Millisecond { // timers keep milliseconds
		t.Errorf("re-armed %v ahead with only running work; want the next grid step after the expected call, %v ahead", next.Sub(h.clock.Now()), step.Sub(h.clock.Now()))
	}
	book.open(gateID(name, "a", 3))
	h.waitFinished("a", 3)
	if got, want := mustFire(t, h, f, "a"), []string{"a:3#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("third commit = %v, want %v", got, want)
	}
	if got := p.Held(); got != 0 {
		t.Errorf("places taken after all commits = %d, want 0", got)
	}
}

// TestFinishedResultsHoldPlacesUpToHeld: finished results do not take buffer
// places, so new elements run while they wait for their commit, until
// WithMaxItemsHeld is reached; past it, elements wait in bag state. (Each key
// here gets one element, so that no later ProcessElement of the key commits
// its result early.)
func TestFinishedResultsHoldPlacesUpToHeld(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(3))
	f := h.stream()
	p, _ := h.c.Pool()
	keys := []string{"a", "b", "c", "d"}
	for i, k := range keys {
		book.open(gateID(name, k, 1))
		h.process(f, k, 1)
		if i < 3 {
			h.waitFinished(k, 1)
		}
	}
	if got := p.Len(); got != 3 {
		t.Errorf("tasks = %d, want 3: three finished results fill WithMaxItemsHeld(3), the fourth waits in bag state", got)
	}
	if got := mustFire(t, h, f, "a"); !reflect.DeepEqual(got, []string{"a:1#0"}) {
		t.Errorf("commit of a = %v, want its finished result", got)
	}
	if got := mustFire(t, h, f, "d"); len(got) != 0 { // starts d, now that there is room
		t.Errorf("first commit of d = %v, want nothing yet", got)
	}
	h.waitFinished("d", 1)
	if got, want := mustFire(t, h, f, "d"), []string{"d:1#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("second commit of d = %v, want %v", got, want)
	}
}

func TestFailureFailsCommitThenRetrySucceeds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		arrange func(id string)
		want    string
	}{
		{"error", func(id string) { book.mu.Lock(); book.fail[id] = errors.New("backend down"); book.mu.Unlock() }, "backend down"},
		{"panic", func(id string) { book.mu.Lock(); book.panic[id] = "kaboom"; book.mu.Unlock() }, "kaboom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := testName(t)
			h := newHarness(t, &gated{Name: name}, stringKey)
			f := h.stream()
			id := gateID(name, "a", 1)
			tc.arrange(id)
			h.process(f, "a", 1)
			book.open(id)
			h.waitFinished("a", 1)
			_, err := h.fire(f, "a")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("commit error = %v, want one carrying %q", err, tc.want)
			}
			if tc.name == "panic" && !strings.Contains(err.Error(), "goroutine") {
				t.Errorf("a panic's error carries no stack: %v", err)
			}
			book.mu.Lock()
			delete(book.panic, id)
			book.mu.Unlock()
			// The runner retries the failed callback with the same state.
			if got, _ := h.fire(f, "a"); len(got) != 0 {
				t.Fatalf("retried commit emitted %v before the rerun finished", got)
			}
			h.waitFinished("a", 1)
			if got, want := mustFire(t, h, f, "a"), []string{"a:1#0"}; !reflect.DeepEqual(got, want) {
				t.Errorf("commit after the rerun = %v, want %v", got, want)
			}
		})
	}
}

func TestConcurrentKeysLoad(t *testing.T) {
	const keys, perKey = 20, 25
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithParallelism(8), WithMaxItemsToBuffer(1000))
	for k := 0; k < keys; k++ {
		for v := 0; v < perKey; v++ {
			book.open(gateID(testName(t), fmt.Sprint("k", k), v))
		}
	}
	// Every key gets its own DoFn instance, like concurrent bundles.
	for k := 0; k < keys; k++ {
		h.st(fmt.Sprint("k", k))
		h.tm(fmt.Sprint("k", k))
	}
	var wg sync.WaitGroup
	results := make([][]string, keys)
	errs := make([]error, keys)
	for k := 0; k < keys; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("k", k)
			f := h.stream()
			ctx, st, tm := context.Background(), h.states[key], h.timers[key]
			emit := func(_ beam.EventTime, z beam.Z) { results[k] = append(results[k], z.(string)) }
			fail := func(beam.EventTime, Failure) {}
			for v := 0; v < perKey; v++ {
				f.StartBundle(ctx, nil, nil, nil)
				if err := f.ProcessElement(ctx, 0, st, tm, key, v, emit, fail, nil); err != nil {
					errs[k] = err
					return
				}
			}
			for round := 0; round < 1000 && st.size() > 0; round++ {
				f.StartBundle(ctx, nil, nil, nil)
				if err := f.OnTimer(ctx, st, tm, key, beamtimers.Context{Family: f.Commit.Family}, emit, fail, nil); err != nil {
					errs[k] = err
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	for k := 0; k < keys; k++ {
		if errs[k] != nil {
			t.Fatalf("key %d: %v", k, errs[k])
		}
		if got := len(results[k]); got != perKey {
			t.Errorf("key k%d: %d outputs, want %d", k, got, perKey)
		}
		seen := map[string]bool{}
		for _, o := range results[k] {
			if seen[o] {
				t.Errorf("key k%d: %s emitted twice", k, o)
			}
			seen[o] = true
		}
	}
}

// TestOneBagWritePerCallback: every bag write is a round trip to the
// runner, so a callback writes a key's pending bag once (after a clear when
// it commits): its new element, or what remains with the queue summary in
// one entry. The bag still reads back as the key's pending elements.
func TestOneBagWritePerCallback(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey)
	f := h.stream()
	finish := func(v int) {
		book.open(gateID(name, "a", v))
		h.waitFinished("a", v)
	}
	for _, step := range []struct {
		name               string
		do                 func() []string
		adds, clears       int
		committed, pending []int
	}{
		{"first element", func() []string { h.process(f, "a", 1); return nil }, 1, 0, nil, []int{1}},
		{"element after a finished one", func() []string { finish(1); h.process(f, "a", 2); return nil }, 1, 1, []int{1}, []int{2}},
		{"element while one runs", func() []string { h.process(f, "a", 3); return nil }, 1, 0, nil, []int{2, 3}},
		{"timer that commits one of two", func() []string { finish(2); return mustFire(t, h, f, "a") }, 1, 1, []int{2}, []int{3}},
		{"timer that commits the last", func() []string { finish(3); return mustFire(t, h, f, "a") }, 0, 1, []int{3}, nil},
	} {
		checkCommitted(t, h, step.name, step.do(), step.committed)
		if adds, clears := h.st("a").writes(stream.PendingStateID); adds != step.adds || clears != step.clears {
			t.Errorf("%s: %d adds and %d clears of the pending bag, want %d and %d", step.name, adds, clears, step.adds, step.clears)
		}
		if adds, clears := h.st("a").writes(stream.QueuedStateID); adds+clears != 0 {
			t.Errorf("%s: %d adds and %d clears of the queue bag, want none", step.name, adds, clears)
		}
		if pending := values(t, h, h.st("a").envelopes()); !reflect.DeepEqual(pending, step.pending) {
			t.Errorf("%s: pending %v, want %v", step.name, pending, step.pending)
		}
	}
}

// TestOneBagWritePerCallbackWithQueue: a key whose elements wait for room
// writes each of its bags once per callback too: the queue bag gets the
// queued element (or its rewrite), the pending bag the new queue summary
// (or its rewrite with it).
func TestOneBagWritePerCallbackWithQueue(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(1), WithMaxWait(0))
	f := h.stream()
	fire := func(v int) func() []string {
		return func() []string {
			book.open(gateID(name, "a", v))
			h.waitFinished("a", v)
			return mustFire(t, h, f, "a")
		}
	}
	process := func(v int) func() []string { return func() []string { h.process(f, "a", v); return nil } }
	type writes struct{ adds, clears int }
	for _, step := range []struct {
		name             string
		do               func() []string
		pending, queue   writes
		committed        []int
		started, waiting []int
	}{
		{"first element starts", process(1), writes{1, 0}, writes{}, nil, []int{1}, nil},
		{"second waits for room", process(2), writes{1, 0}, writes{1, 0}, nil, []int{1}, []int{2}},
		{"third waits behind it", process(3), writes{1, 0}, writes{1, 0}, nil, []int{1}, []int{2, 3}},
		{"timer commits 1, starts 2", fire(1), writes{1, 1}, writes{1, 1}, []int{1}, []int{2}, []int{3}},
		{"timer commits 2, starts 3", fire(2), writes{1, 1}, writes{0, 1}, []int{2}, []int{3}, nil},
		{"timer commits 3", fire(3), writes{0, 1}, writes{}, []int{3}, nil, nil},
	} {
		checkCommitted(t, h, step.name, step.do(), step.committed)
		for _, bag := range []struct {
			id   string
			want writes
		}{{stream.PendingStateID, step.pending}, {stream.QueuedStateID, step.queue}} {
			var got writes
			if got.adds, got.clears = h.st("a").writes(bag.id); got != bag.want {
				t.Errorf("%s: %d adds and %d clears of bag %s, want %d and %d", step.name, got.adds, got.clears, bag.id, bag.want.adds, bag.want.clears)
			}
		}
		if got := values(t, h, h.st("a").envelopes()); !reflect.DeepEqual(got, step.started) {
			t.Errorf("%s: pending %v, want %v", step.name, got, step.started)
		}
		if got := values(t, h, h.st("a").queued()); !reflect.DeepEqual(got, step.waiting) {
			t.Errorf("%s: queued %v, want %v", step.name, got, step.waiting)
		}
	}
}

// TestRewriteKeepsHighestSeq: a rewrite that drops the key's latest
// element (committed before an earlier one) keeps the highest sequence
// number given in its queue summary, so the key's next element is not given
// that number again (see state.ElementID).
func TestRewriteKeepsHighestSeq(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey)
	f := h.stream()
	h.process(f, "a", 1)
	h.process(f, "a", 2)
	book.open(gateID(name, "a", 2))
	h.waitFinished("a", 2)
	if got, want := mustFire(t, h, f, "a"), []string{"a:2#0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("commit = %v, want %v", got, want)
	}
	if n := h.st("a").summaries(); n != 1 {
		t.Errorf("the rewritten bag holds %d entries with a queue summary, want 1", n)
	}
	h.process(f, "a", 3)
	for v, want := range map[int]int64{1: 1, 3: 3} {
		if envs := h.pendingOf("a", v); len(envs) != 1 || envs[0].Seq != want {
			t.Errorf("element %d pending as %+v, want one with Seq %d", v, envs, want)
		}
	}
	book.open(gateID(name, "a", 1))
	book.open(gateID(name, "a", 3))
	h.waitKey("a")
	if got, want := mustFire(t, h, f, "a"), []string{"a:1#0", "a:3#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("commit = %v, want %v", got, want)
	}
}

// checkCommitted checks that a step of key a's callbacks committed the
// values want: out (what a timer emitted), with what its ProcessElements
// committed since the last check.
func checkCommitted(t *testing.T, h *harness, step string, out []string, want []int) {
	t.Helper()
	out = append(out, h.early["a"]...)
	delete(h.early, "a")
	var wantOut []string
	for _, v := range want {
		wantOut = append(wantOut, fmt.Sprintf("a:%d#0", v))
	}
	if !reflect.DeepEqual(sorted(out), wantOut) {
		t.Errorf("%s: committed %v, want %v", step, out, wantOut)
	}
}

// values decodes the values of envelopes, in order.
func values(t *testing.T, h *harness, envs []state.Envelope) []int {
	t.Helper()
	var out []int
	for _, env := range envs {
		v, err := h.c.DecodeValue(nil, env.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.(int))
	}
	return out
}

// TestLateTimerFindsItsResult: a key whose timer comes later than the stale
// period (a runner that lags) still finds its finished result, as long as
// no element needed its place meanwhile: nothing sweeps results on a timer,
// so the key commits without calling again.
func TestLateTimerFindsItsResult(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, stringKey)
	f := h.stream()
	h.process(f, "a", 1)
	book.open(gateID(name, "a", 1))
	h.waitFinished("a", 1)
	for _, k := range []string{"b", "c", "d"} { // other keys' callbacks go on, a second or more apart
		h.clock.Advance(3 * h.c.StaleAfter())
		book.open(gateID(name, k, 1))
		h.process(f, k, 1)
	}
	if got, want := mustFire(t, h, f, "a"), []string{"a:1#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("late commit of a = %v, want %v", got, want)
	}
	if n := book.count(gateID(name, "a", 1)); n != 1 {
		t.Errorf("a's element was called %d times, want 1: its result was dropped while its timer was late", n)
	}
}

// TestFirstBundleTimer: until a bundle of the transform has ended on the
// worker, nothing tells how long its bundles last, and an element's timer
// is at least timers.Cadence.FirstLead ahead; once one has ended, a
// newcomer's is the backstop's floor ahead again (TestNewcomerTimer).
func TestFirstBundleTimer(t *testing.T) {
	const c = 100 * time.Millisecond
	cad := timers.NewCadence(c)
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithCallbackFrequency(c))
	f := h.stream()
	f.StartBundle(context.Background(), nil, nil, nil) // not h.process: no bundle has ended
	if err := f.ProcessElement(context.Background(), mtime.FromTime(h.clock.Now()), h.st("a"), h.tm("a"), "a", 1, h.emitter("a"), h.fail, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.tm("a").take(); got.Before(h.clock.Now().Add(cad.FirstLead)) {
		t.Errorf("an element in the worker's first bundle set its timer %v ahead, want at least FirstLead (%v)", got.Sub(h.clock.Now()), cad.FirstLead)
	}
	if err := f.FinishBundle(context.Background(), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	h.process(f, "b", 1)
	if got, ok := h.tm("b").take(); !ok || !got.Equal(cad.OnGrid(h.clock.Now().Add(cad.BackstopFloor))) {
		t.Errorf("a newcomer after the worker's first bundle ended set its timer %v ahead (set: %v), want the grid step after the backstop's floor (%v)", got.Sub(h.clock.Now()), ok, cad.BackstopFloor)
	}
	openAll(testName(t), "a", 2)
	openAll(testName(t), "b", 2)
}

// TestNewcomerTimer: at a short C, on a worker that has set timers for
// less than Cadence.Forget, a key's first element sets a busy key's timer
// (the backstop's floor ahead, on the grid) while the pool holds less than
// half its places; past that it is planned as a quiet key's, and so is one
// that finds no room: then its timer must start it. Past Forget a key not
// seen is quiet.
func TestNewcomerTimer(t *testing.T) {
	const c = 100 * time.Millisecond
	name := testName(t)
	cad := timers.NewCadence(c)
	h := newHarness(t, &gated{Name: name}, stringKey, WithCallbackFrequency(c), WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(3))
	f := h.stream()
	h.process(f, "a", 1)
	if got, _ := h.tm("a").take(); !got.Equal(cad.OnGrid(h.clock.Now().Add(cad.BackstopFloor))) {
		t.Errorf("a newcomer's timer is %v ahead, want the grid step after the backstop's floor (%v)", got.Sub(h.clock.Now()), cad.BackstopFloor)
	}
	for _, k := range []string{"x", "y"} {
		h.process(f, k, 1) // the pool holds half its places or more
		if got, _ := h.tm(k).take(); !got.Before(h.clock.Now().Add(cad.BackstopFloor)) {
			t.Errorf("newcomer %s while the pool holds half its places or more: its timer is %v ahead, want a quiet key's, sooner than the backstop's floor (%v)", k, got.Sub(h.clock.Now()), cad.BackstopFloor)
		}
	}
	h.process(f, "b", 1) // no room: the pool holds a's, x's and y's
	if got, _ := h.tm("b").take(); !got.Before(h.clock.Now().Add(cad.BackstopFloor)) {
		t.Errorf("a newcomer whose element found no room has its timer %v ahead, want sooner than the backstop's floor (%v): it must start the element", got.Sub(h.clock.Now()), cad.BackstopFloor)
	}
	book.open(gateID(name, "a", 1))
	h.waitFinished("a", 1)
	mustFire(t, h, f, "a")
	h.clock.Advance(cad.Forget) // the worker keeps setting timers, b's included
	h.process(f, "c", 1)
	if got, _ := h.tm("c").take(); !got.Before(h.clock.Now().Add(cad.BackstopFloor)) {
		t.Errorf("a key not seen by a worker %v old has its timer %v ahead, want a quiet key's, sooner than the backstop's floor", cad.Forget, got.Sub(h.clock.Now()))
	}
	openAll(name, "b", 2) // values 0 and 1
	openAll(name, "c", 2)
	openAll(name, "x", 2)
	openAll(name, "y", 2)
}

package async_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// inBursts gives element i the event time of second (i/5)*10 + i%5: bursts
// of five elements a second apart, ten seconds from one burst to the next.
type inBursts struct{}

func (inBursts) ProcessElement(i int, emit func(beam.EventTime, int)) {
	emit(mtime.FromMilliseconds(int64((i/5)*10+i%5)*1000), i)
}

// rekey keys an output "key:value" by its key again, for a GroupByKey.
func rekey(o string) (string, string) { return o[:strings.IndexByte(o, ':')], o }

// describeGroup prints a group as the step after a GroupByKey sees it: its
// key, window and sorted values.
type describeGroup struct{}

func (describeGroup) ProcessElement(w beam.Window, key string, values func(*string) bool) string {
	var vs []string
	var v string
	for values(&v) {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	return fmt.Sprintf("%s in %v: %v", key, w, vs)
}

// sumGroup sums a group: one element per key and window.
func sumGroup(key string, values func(*int) bool) (string, int) {
	sum, v := 0, 0
	for values(&v) {
		sum += v
	}
	return key, sum
}

// burstTicks emits the ticks of an unbounded source in bursts: five ticks
// with elements, then five without.
type burstTicks struct {
	Keys       int
	StartMs    int64
	IntervalMs int64
}

func (f *burstTicks) ProcessElement(ts beam.EventTime, _ []byte, emit func(string, int)) {
	tick := int((int64(ts) - f.StartMs) / f.IntervalMs)
	if tick%10 >= 5 {
		return
	}
	for k := 0; k < f.Keys; k++ {
		emit(fmt.Sprintf("k%03d", k), tick*f.Keys+k)
	}
}

func init() {
	register.DoFn2x0[int, func(beam.EventTime, int)](&inBursts{})
	register.Function1x2(rekey)
	register.DoFn3x1[beam.Window, string, func(*string) bool, string](&describeGroup{})
	register.Function2x2(sumGroup)
	register.DoFn3x0[beam.EventTime, []byte, func(string, int)](&burstTicks{})
	register.Iter1[string]()
	register.Iter1[int]()
}

// sessionsLikeParDo applies fn to keyed (in session windows) with
// async.ParDo and with a plain beam.ParDo, groups both outputs by key, and
// asserts that the GroupByKey forms the same sessions with the same
// elements.
func sessionsLikeParDo(s beam.Scope, fn any, keyed beam.PCollection, opts ...async.Option) {
	group := func(out beam.PCollection) beam.PCollection {
		groups := beam.ParDo(s, describeGroup{}, beam.GroupByKey(s, beam.ParDo(s, rekey, out)))
		return beam.WindowInto(s, window.NewGlobalWindows(), groups)
	}
	passert.Equals(s, group(async.ParDo(s, fn, keyed, opts...)), group(beam.ParDo(s, fn, keyed)))
}

// TestPipelineSessionWindowsBounded: on bounded input in session windows
// (each element in [t, t+gap) until a GroupByKey merges them), a GroupByKey
// after the transform forms the same sessions as after a plain ParDo.
func TestPipelineSessionWindowsBounded(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	keyed := burstsInSessions(s, 30)
	sessionsLikeParDo(s, &slowLabel{SleepMs: 2}, keyed, async.WithParallelism(8))
	ptest.RunAndValidate(t, p)
}

// TestPipelineSessionWindowsUnbounded: on an unbounded source in session
// windows each output is in its element's window [t, t+gap), as a plain
// ParDo's is, before any GroupByKey. (The GroupByKey itself is no oracle
// here: prism v2.77.0 merges the session windows of a streaming GroupByKey
// only among elements that arrive together, so the sessions it forms depend
// on bundling, after a plain ParDo as after this transform.)
func TestPipelineSessionWindowsUnbounded(t *testing.T) {
	interval := 100 * time.Millisecond
	start := time.Now().Truncate(time.Second)
	p, s := beam.NewPipelineWithRoot()
	impulses := periodic.Impulse(s, start, start.Add(20*interval), interval, false)
	elems := beam.ParDo(s, &burstTicks{Keys: 3, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
	windowed := beam.WindowInto(s, window.NewSessions(250*time.Millisecond), elems)
	likeParDo(s, &slowLabel{SleepMs: 5}, windowed, async.WithParallelism(8), async.WithCallbackFrequency(200*time.Millisecond))
	ptest.RunAndValidate(t, p)
}

// TestPipelineMergedSessionsFail: an element in a session window that a
// GroupByKey has merged cannot get its window back from its timestamp; the
// pipeline fails with a message that says so and what to change, rather
// than putting outputs in other windows.
func TestPipelineMergedSessionsFail(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	keyed := burstsInSessions(s, 10)
	sums := beam.ParDo(s, sumGroup, beam.GroupByKey(s, keyed))
	async.ParDo(s, &slowLabel{}, sums)
	err := ptest.Run(p)
	if err == nil || !strings.Contains(err.Error(), "merged") || !strings.Contains(err.Error(), "before the GroupByKey") {
		t.Errorf("pipeline error = %v, want one saying the session window was merged and what to change", err)
	}
}

// TestPipelineSlidingGroupsKeepTheirWindow: a GroupByKey's output in sliding
// windows sits in one window though its timestamp lies in several; the
// transform's output stays in that one window, as a plain ParDo's does.
func TestPipelineSlidingGroupsKeepTheirWindow(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	ints := make([]int, 40)
	for i := range ints {
		ints[i] = i
	}
	stamped := beam.ParDo(s, secondsApart{}, beam.CreateList(s, ints))
	keyed := beam.ParDo(s, &keyBy{Keys: 3}, beam.WindowInto(s, window.NewSlidingWindows(5*time.Second, 10*time.Second), stamped))
	sums := beam.ParDo(s, sumGroup, beam.GroupByKey(s, keyed))
	likeParDo(s, &slowLabel{SleepMs: 1}, sums, async.WithParallelism(8))
	ptest.RunAndValidate(t, p)
}

// TestPipelineSlidingWindowsOneKeyPerElement: bounded input in sliding
// windows, one key per element and more of it than WithMaxItemsHeld, runs
// like every other bounded input (once per window, as a plain ParDo's
// window-observing step sees it); it once waited for one drain per key and
// window, about one call at a time.
func TestPipelineSlidingWindowsOneKeyPerElement(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	ints := make([]int, 1000)
	for i := range ints {
		ints[i] = i
	}
	stamped := beam.ParDo(s, secondsApart{}, beam.CreateList(s, ints))
	keyed := beam.ParDo(s, &keyBy{Keys: 1000}, beam.WindowInto(s, window.NewSlidingWindows(10*time.Second, 20*time.Second), stamped))
	likeParDo(s, &slowLabel{SleepMs: 2}, keyed, async.WithParallelism(64), async.WithMaxItemsHeld(200))
	ptest.RunAndValidate(t, p)
}

// failureKind prints a failure record's kind and value.
func failureKind(fr async.Failure) string { return fr.Kind + ":" + fr.ValueText }

func init() { register.Function1x1(failureKind) }

// TestPipelineMergedSessionsGoToFailures: with a failure output, an element
// whose window cannot come back is a failure record of kind "window" (it is
// never called), not a failed bundle that a streaming runner would retry for
// ever.
func TestPipelineMergedSessionsGoToFailures(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	keyed := burstsInSessions(s, 10)
	sums := beam.ParDo(s, sumGroup, beam.GroupByKey(s, keyed)) // four merged sessions: two bursts over two keys (sums 6, 4; 14, 21)
	out, failures := async.ParDoWithFailures(s, &slowLabel{}, sums)
	passert.Empty(s, out)
	kinds := beam.ParDo(s, failureKind, failures)
	passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), kinds), "window:4", "window:6", "window:14", "window:21")
	ptest.RunAndValidate(t, p)
}

// burstsInSessions is the values 0..n-1 stamped in bursts (inBursts), over
// two keys, in session windows of gap 2 s: the input of the session tests.
func burstsInSessions(s beam.Scope, n int) beam.PCollection {
	ints := make([]int, n)
	for i := range ints {
		ints[i] = i
	}
	stamped := beam.ParDo(s, inBursts{}, beam.CreateList(s, ints))
	return beam.ParDo(s, &keyBy{Keys: 2}, beam.WindowInto(s, window.NewSessions(2*time.Second), stamped))
}

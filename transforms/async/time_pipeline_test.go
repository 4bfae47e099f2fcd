package async_test

import (
	"context"
	"fmt"
	"reflect"
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

// stamp describes an output as the next step sees it: its value, event
// time and window.
type stamp struct{}

func (stamp) ProcessElement(w beam.Window, ts beam.EventTime, v string) string {
	return fmt.Sprintf("%s@%d@%v", v, int64(ts), w)
}

// secondsApart gives element i the event time epoch + i seconds.
type secondsApart struct{}

func (secondsApart) ProcessElement(i int, emit func(beam.EventTime, int)) {
	emit(mtime.FromMilliseconds(int64(i)*1000), i)
}

// custKey is a struct key, as users key by small structs.
type custKey struct {
	Region string
	ID     int
}

// byInt and byStruct key elements by an int and by a struct.
type byInt struct{ Keys int }

func (f *byInt) ProcessElement(i int) (int, int) { return i % f.Keys, i }

type byStruct struct{ Keys int }

func (f *byStruct) ProcessElement(i int) (custKey, int) {
	return custKey{Region: fmt.Sprint("r", i%2), ID: i % f.Keys}, i
}

// labelInt and labelStruct are wrapped fns over int and struct keys.
type labelInt struct{}

func (labelInt) ProcessElement(_ context.Context, key int, v int, emit func(string)) {
	emit(fmt.Sprintf("%v:%d", key, v))
}

type labelStruct struct{}

func (labelStruct) ProcessElement(_ context.Context, key custKey, v int, emit func(string)) {
	emit(fmt.Sprintf("%v:%d", key, v))
}

func init() {
	register.DoFn3x1[beam.Window, beam.EventTime, string, string](&stamp{})
	register.DoFn2x0[int, func(beam.EventTime, int)](&secondsApart{})
	register.DoFn1x2[int, int, int](&byInt{})
	register.DoFn1x2[int, custKey, int](&byStruct{})
	register.DoFn4x0[context.Context, int, int, func(string)](&labelInt{})
	register.DoFn4x0[context.Context, custKey, int, func(string)](&labelStruct{})
	beam.RegisterType(reflect.TypeOf(custKey{}))
	register.Emitter2[int, int]()
	register.Emitter2[custKey, int]()
}

// likeParDo applies fn to keyed twice, with async.ParDo and with a plain
// beam.ParDo, and asserts that the next step sees the same outputs with the
// same event times in the same windows from both.
func likeParDo(s beam.Scope, fn any, keyed beam.PCollection, opts ...async.Option) {
	got := beam.ParDo(s, stamp{}, async.ParDo(s, fn, keyed, opts...))
	want := beam.ParDo(s, stamp{}, beam.ParDo(s, fn, keyed))
	global := window.NewGlobalWindows()
	passert.Equals(s, beam.WindowInto(s, global, got), beam.WindowInto(s, global, want))
}

var windowings = []struct {
	name string
	fn   *window.Fn
}{
	{"global", window.NewGlobalWindows()},
	{"fixed", window.NewFixedWindows(10 * time.Second)},
	{"sliding", window.NewSlidingWindows(5*time.Second, 10*time.Second)}, // each element in two windows
}

// TestPipelineTimestampsAndWindowsBounded: on bounded input every output
// carries its own element's event time and window, as a plain ParDo's would,
// in the global, fixed and sliding windows.
func TestPipelineTimestampsAndWindowsBounded(t *testing.T) {
	for _, w := range windowings {
		t.Run(w.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			ints := make([]int, 40)
			for i := range ints {
				ints[i] = i
			}
			stamped := beam.ParDo(s, secondsApart{}, beam.CreateList(s, ints))
			keyed := beam.ParDo(s, &keyBy{Keys: 2}, beam.WindowInto(s, w.fn, stamped))
			likeParDo(s, &slowLabel{SleepMs: 1}, keyed, async.WithParallelism(8))
			ptest.RunAndValidate(t, p)
		})
	}
}

// TestPipelineTimestampsAndWindowsUnbounded is the same on an unbounded
// source, in windows of a second.
func TestPipelineTimestampsAndWindowsUnbounded(t *testing.T) {
	for _, w := range []struct {
		name string
		fn   *window.Fn
	}{
		{"global", window.NewGlobalWindows()},
		{"fixed", window.NewFixedWindows(time.Second)},
		{"sliding", window.NewSlidingWindows(500*time.Millisecond, time.Second)},
	} {
		t.Run(w.name, func(t *testing.T) {
			interval := 100 * time.Millisecond
			start := time.Now().Truncate(time.Second)
			p, s := beam.NewPipelineWithRoot()
			impulses := periodic.Impulse(s, start, start.Add(20*interval), interval, false)
			elems := beam.ParDo(s, &fanOut{PerTick: 4, Keys: 3, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
			likeParDo(s, &slowLabel{SleepMs: 5}, beam.WindowInto(s, w.fn, elems), async.WithParallelism(8), async.WithCallbackFrequency(200*time.Millisecond))
			ptest.RunAndValidate(t, p)
		})
	}
}

// TestPipelineWindowsOfOneKeyAreIndependent: one key over many windows of an
// unbounded source, with calls longer than a window. Each window's
// callbacks see only its own elements, so none cancels another's work, and
// every element is output once, in its window.
func TestPipelineWindowsOfOneKeyAreIndependent(t *testing.T) {
	interval := 100 * time.Millisecond
	start := time.Now().Truncate(time.Second)
	p, s := beam.NewPipelineWithRoot()
	impulses := periodic.Impulse(s, start, start.Add(30*interval), interval, false)
	elems := beam.ParDo(s, &fanOut{PerTick: 1, Keys: 1, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
	windowed := beam.WindowInto(s, window.NewFixedWindows(300*time.Millisecond), elems)
	likeParDo(s, &slowLabel{SleepMs: 900}, windowed, async.WithParallelism(4), async.WithCallbackFrequency(200*time.Millisecond))
	ptest.RunAndValidate(t, p)
}

// TestPipelineIntAndStructKeys: keys of type int and of a struct type work,
// on bounded and unbounded input alike.
func TestPipelineIntAndStructKeys(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	ints := make([]int, 60)
	for i := range ints {
		ints[i] = i
	}
	col := beam.CreateList(s, ints)
	likeParDo(s, &labelInt{}, beam.ParDo(s, &byInt{Keys: 7}, col), async.WithParallelism(4))
	likeParDo(s, &labelStruct{}, beam.ParDo(s, &byStruct{Keys: 5}, col), async.WithParallelism(4), async.WithOrdered())
	ptest.RunAndValidate(t, p)
}

// inTwoWindows emits element i at i seconds and again, the same value, ten
// seconds later: under fixed windows of ten seconds the two copies are in
// different windows.
type inTwoWindows struct{}

func (inTwoWindows) ProcessElement(i int, emit func(beam.EventTime, int)) {
	emit(mtime.FromMilliseconds(int64(i)*1000), i)
	emit(mtime.FromMilliseconds(int64(i+10)*1000), i)
}

// outsideWindow moves each element's timestamp an hour back, out of the
// window it stays in.
type outsideWindow struct{}

func (outsideWindow) ProcessElement(ts beam.EventTime, k string, v int) (beam.EventTime, string, int) {
	return ts - mtime.FromMilliseconds(3_600_000), k, v
}

func init() {
	register.DoFn2x0[int, func(beam.EventTime, int)](&inTwoWindows{})
	register.DoFn3x3[beam.EventTime, string, int, beam.EventTime, string, int](&outsideWindow{})
}

// TestPipelineCopiesInTwoFixedWindows: bounded input in fixed windows runs
// in the global window, its outputs put back in their windows; the same
// value under one key in two windows is still two elements, one output in
// each window, as with a plain ParDo.
func TestPipelineCopiesInTwoFixedWindows(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	ints := make([]int, 10)
	for i := range ints {
		ints[i] = i
	}
	stamped := beam.ParDo(s, inTwoWindows{}, beam.CreateList(s, ints))
	keyed := beam.ParDo(s, &keyBy{Keys: 2}, beam.WindowInto(s, window.NewFixedWindows(10*time.Second), stamped))
	likeParDo(s, &slowLabel{SleepMs: 1}, keyed, async.WithParallelism(4))
	ptest.RunAndValidate(t, p)
}

// TestPipelineTimestampOutsideItsFixedWindow: an element whose timestamp
// lies outside its window cannot get its window back from its timestamp, so
// the pipeline fails with a message that says so, rather than moving its
// output to another window.
func TestPipelineTimestampOutsideItsFixedWindow(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	keyed := beam.ParDo(s, &keyBy{Keys: 2}, beam.WindowInto(s, window.NewFixedWindows(10*time.Second), beam.Create(s, 1, 2, 3)))
	async.ParDo(s, &slowLabel{SleepMs: 1}, beam.ParDo(s, outsideWindow{}, keyed))
	err := ptest.Run(p)
	if err == nil || !strings.Contains(err.Error(), "outside its window") {
		t.Errorf("pipeline = %v, want an error saying an element's timestamp is outside its window", err)
	}
}

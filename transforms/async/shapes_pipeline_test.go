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

// The ParDo shapes a wrapped fn may have, each run through async.ParDo and
// through a plain beam.ParDo on the same input: the outputs, with their
// event times and windows, must be the same.

func emitPair(ctx context.Context, k string, v int, emit func(string, int)) error {
	emit(k+"-twice", 2*v)
	return nil
}

func emitWithWindowAndTime(w beam.Window, t beam.EventTime, k string, v int, emit func(string)) {
	emit(fmt.Sprintf("%s/%d in %v at %d", k, v, w, t.Milliseconds()))
}

func returnValue(k string, v int) string { return fmt.Sprintf("%s=%d", k, v) }

func returnValueOrError(ctx context.Context, t beam.EventTime, k string, v int) (string, error) {
	return fmt.Sprintf("%s=%d at %d", k, v, t.Milliseconds()), nil
}

func returnPair(k string, v int) (int, string) { return v, k }

func returnPairOrError(ctx context.Context, w beam.Window, k string, v int) (int, string, error) {
	return v, fmt.Sprintf("%s in %v", k, w), nil
}

// pairsDoFn is a DoFn struct with a KV emitter.
type pairsDoFn struct{ Suffix string }

func (f *pairsDoFn) ProcessElement(k string, v int, emit func(int, string)) {
	emit(v, k+f.Suffix)
	emit(-v, k+f.Suffix)
}

// pairsBatch is a batch fn with a KV emitter: per element what pairsDoFn
// emits.
type pairsBatch struct{ Suffix string }

func (f *pairsBatch) ProcessBatch(ctx context.Context, keys []string, values []int, emit func(int, int, string)) error {
	for i := range keys {
		emit(i, values[i], keys[i]+f.Suffix)
		emit(i, -values[i], keys[i]+f.Suffix)
	}
	return nil
}

// stampedInput gives element i the key "k{i%3}", the value i and the event
// time i seconds after a fixed instant.
func stampedInput(i int) (beam.EventTime, string, int) {
	return mtime.FromMilliseconds(1_700_000_000_000 + int64(i)*1000), fmt.Sprintf("k%d", i%3), i
}

// describeValue and describePair print an output with its window and time.
func describeValue(w beam.Window, t beam.EventTime, v beam.X) string {
	return fmt.Sprintf("%v in %v at %d", v, w, t.Milliseconds())
}

func describePair(w beam.Window, t beam.EventTime, k beam.X, v beam.Y) string {
	return fmt.Sprintf("%v: %v in %v at %d", k, v, w, t.Milliseconds())
}

func init() {
	register.Function4x1(emitPair)
	register.Function5x0(emitWithWindowAndTime)
	register.Function2x1(returnValue)
	register.Function4x2(returnValueOrError)
	register.Function2x2(returnPair)
	register.Function4x3(returnPairOrError)
	register.DoFn3x0[string, int, func(int, string)](&pairsDoFn{})
	beam.RegisterType(reflect.TypeOf((*pairsBatch)(nil)).Elem())
	register.Function1x3(stampedInput)
	register.Function3x1(describeValue)
	register.Function4x1(describePair)
	register.Emitter2[int, string]()
	register.Emitter1[string]()
}

// shapeInputs are the inputs each shape runs on: bounded in the global
// window, in fixed and in sliding windows, and unbounded in fixed windows.
var shapeInputs = []struct {
	name string
	make func(s beam.Scope) beam.PCollection
}{
	{"global", func(s beam.Scope) beam.PCollection { return stamped(s, 12) }},
	{"fixed", func(s beam.Scope) beam.PCollection {
		return beam.WindowInto(s, window.NewFixedWindows(5*time.Second), stamped(s, 12))
	}},
	{"sliding", func(s beam.Scope) beam.PCollection {
		return beam.WindowInto(s, window.NewSlidingWindows(2*time.Second, 6*time.Second), stamped(s, 12))
	}},
	{"unbounded", func(s beam.Scope) beam.PCollection {
		start := time.Now().Truncate(time.Second)
		interval := 100 * time.Millisecond
		impulses := periodic.Impulse(s, start, start.Add(12*interval), interval, false)
		elems := beam.ParDo(s, &fanOut{PerTick: 1, Keys: 3, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
		return beam.WindowInto(s, window.NewFixedWindows(time.Second), elems)
	}},
}

func stamped(s beam.Scope, n int) beam.PCollection {
	ints := make([]int, n)
	for i := range ints {
		ints[i] = i
	}
	return beam.ParDo(s, stampedInput, beam.CreateList(s, ints))
}

// TestPipelineParDoShapes: every shape gives what beam.ParDo gives, on every
// input.
func TestPipelineParDoShapes(t *testing.T) {
	shapes := []struct {
		name  string
		fn    any
		pairs bool
	}{
		{"KV emitter", emitPair, true},
		{"window and event time", emitWithWindowAndTime, false},
		{"returned value", returnValue, false},
		{"returned value and error", returnValueOrError, false},
		{"returned pair", returnPair, true},
		{"returned pair and error", returnPairOrError, true},
		{"DoFn with KV emitter", &pairsDoFn{Suffix: "!"}, true},
	}
	for _, in := range shapeInputs {
		for _, shape := range shapes {
			t.Run(in.name+"/"+shape.name, func(t *testing.T) {
				p, s := beam.NewPipelineWithRoot()
				records := in.make(s)
				opts := []async.Option{async.WithCallbackFrequency(200 * time.Millisecond)}
				got, want := async.ParDo(s, shape.fn, records, opts...), beam.ParDo(s, shape.fn, records)
				passert.Equals(s, described(s, got, shape.pairs), described(s, want, shape.pairs))
				ptest.RunAndValidate(t, p)
			})
		}
	}
}

// TestPipelineBatchParDoPairs: a batch fn with a KV emitter gives what the
// same fn per element gives through beam.ParDo.
func TestPipelineBatchParDoPairs(t *testing.T) {
	for _, in := range shapeInputs[:2] {
		t.Run(in.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			records := in.make(s)
			got := async.BatchParDo(s, &pairsBatch{Suffix: "!"}, records, async.WithBatchSize(4), async.WithBatchWait(100*time.Millisecond))
			want := beam.ParDo(s, &pairsDoFn{Suffix: "!"}, records)
			passert.Equals(s, described(s, got, true), described(s, want, true))
			ptest.RunAndValidate(t, p)
		})
	}
}

// described prints each output with its window and time, in the global
// window, for passert.
func described(s beam.Scope, col beam.PCollection, pairs bool) beam.PCollection {
	var out beam.PCollection
	if pairs {
		out = beam.ParDo(s, describePair, col)
	} else {
		out = beam.ParDo(s, describeValue, col)
	}
	return beam.WindowInto(s, window.NewGlobalWindows(), out)
}

// TestParDoShapeRefusals: shapes the transform cannot take are refused with
// what to do instead.
func TestParDoShapeRefusals(t *testing.T) {
	cases := []struct {
		name string
		fn   any
		want string
	}{
		{"two emitters", twoEmitters, "split it with beam.ParDo after the transform"},
		{"side input", withSideInput, "side inputs are not supported"},
		{"timestamped emitter", timestampedEmitter, "gives each output its element's event time"},
		{"no output", noOutput, "it has no output"},
		{"emitter and returned value", emitterAndValue, "not both"},
		{"pane", withPane, "beam.PaneInfo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			_, err := async.TryParDo(s, c.fn, stamped(s, 2))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("TryParDo error = %v; want one containing %q", err, c.want)
			}
		})
	}
}

func twoEmitters(k string, v int, a func(string), b func(int))              {}
func withSideInput(k string, v int, side []string, emit func(string))       {}
func timestampedEmitter(k string, v int, emit func(beam.EventTime, string)) {}
func noOutput(k string, v int) error                                        { return nil }
func emitterAndValue(k string, v int, emit func(string)) string             { return "" }
func withPane(p beam.PaneInfo, k string, v int, emit func(string))          {}

func init() {
	register.Function4x0(twoEmitters)
	register.Function4x0(withSideInput)
	register.Function3x0(timestampedEmitter)
	register.Function2x1(noOutput)
	register.Function3x1(emitterAndValue)
	register.Function4x0(withPane)
}

// TestPipelineCacheKeepsWindowsApart: under WithCache, a fn that reads its
// element's window answers each window of a sliding-window element on its
// own (the copies share key, value and time), as beam.ParDo does.
func TestPipelineCacheKeepsWindowsApart(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	records := shapeInputs[2].make(s) // sliding windows
	got := async.ParDo(s, emitWithWindowAndTime, records, async.WithCache(async.Cache{Size: 100, TTL: time.Minute}))
	want := beam.ParDo(s, emitWithWindowAndTime, records)
	passert.Equals(s, described(s, got, false), described(s, want, false))
	ptest.RunAndValidate(t, p)
}

package async_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// tenValues keeps a key and maps its value to one of ten.
func tenValues(k string, v int) (string, int) { return k, v % 10 }

// paneText describes an output's pane.
type paneText struct{}

func (paneText) ProcessElement(pn beam.PaneInfo, v string) string {
	return fmt.Sprintf("%v first=%v last=%v", pn.Timing, pn.IsFirst, pn.IsLast)
}

func init() {
	register.Function2x2(tenValues)
	register.DoFn2x1[beam.PaneInfo, string, string](&paneText{})
}

// TestPipelineEqualRecordsAreSeparateElements: 50 records under one key with
// only ten distinct values give 50 outputs, as a plain ParDo does, whether
// equal records are pending at the same time (calls of 200 ms) or not, on
// bounded and unbounded input.
func TestPipelineEqualRecordsAreSeparateElements(t *testing.T) {
	var want []any
	for i := 0; i < 50; i++ {
		want = append(want, fmt.Sprintf("k000:%d", i%10))
	}
	t.Run("bounded", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		records := beam.ParDo(s, tenValues, input(s, 50, 1))
		passert.EqualsList(s, async.ParDo(s, &slowLabel{SleepMs: 200}, records, async.WithParallelism(16)), want)
		ptest.RunAndValidate(t, p)
	})
	t.Run("unbounded", func(t *testing.T) {
		interval := 100 * time.Millisecond
		start := time.Now().Truncate(time.Second)
		p, s := beam.NewPipelineWithRoot()
		impulses := periodic.Impulse(s, start, start.Add(10*interval), interval, false)
		elems := beam.ParDo(s, &fanOut{PerTick: 5, Keys: 1, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
		records := beam.ParDo(s, tenValues, elems)
		out := async.ParDo(s, &slowLabel{SleepMs: 200}, records, async.WithParallelism(16), async.WithCallbackFrequency(200*time.Millisecond))
		passert.EqualsList(s, out, want)
		ptest.RunAndValidate(t, p)
	})
}

// TestPipelineWithIDFnMergesCopies: WithIDFn says which records are the same
// element; records of one ID pending at the same time are one element (one
// call, one output).
func TestPipelineWithIDFnMergesCopies(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	records := beam.ParDo(s, tenValues, input(s, 50, 1))
	out := async.ParDo(s, &slowLabel{SleepMs: 500}, records, async.WithParallelism(64), async.WithIDFn(sameID))
	// All 50 are accepted within the first call's 500 ms: one element.
	passert.Count(s, out, "outputs", 1)
	ptest.RunAndValidate(t, p)
}

func sameID(int) string { return "one" }

func init() { register.Function1x1(sameID) }

// TestPipelinePanes pins down what README says of panes: Beam Go lets a DoFn
// set an output's timestamp but not its pane, so an output carries the pane
// of whatever the transform is processing when it emits it: another input
// element's, or, from a timer or the end of a bundle, Beam's "no firing"
// pane (timing unknown, first and last). A plain ParDo keeps each
// element's pane.
func TestPipelinePanes(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	sums := beam.ParDo(s, sumKV, stats.SumPerKey(s, input(s, 200, 20))) // a GroupByKey's firing panes
	inputPanes := beam.ParDo(s, paneText{}, beam.ParDo(s, &slowLabel{}, sums))
	outputPanes := beam.ParDo(s, paneText{}, async.ParDo(s, &slowLabel{SleepMs: 1}, sums))
	noFiring := beam.Create(s, "unknown first=true last=true")
	allowed := beam.ParDo(s, distinct, beam.CombinePerKey(s, keepOne, beam.ParDo(s, withUnit, beam.Flatten(s, inputPanes, noFiring))))
	passert.Count(s, beam.ParDo(s, notIn, outputPanes, beam.SideInput{Input: allowed}), "outputs with another pane", 0)
	ptest.RunAndValidate(t, p)
}

func sumKV(k string, v int) (string, int) { return k, v }
func withUnit(s string) (string, int)     { return s, 1 }
func keepOne(a, _ int) int                { return a }
func distinct(s string, _ int) string     { return s }

// notIn passes on each pane description that is not among allowed.
func notIn(pane string, allowed []string, emit func(string)) {
	for _, a := range allowed {
		if a == pane {
			return
		}
	}
	emit(pane)
}

func init() {
	register.Function2x2(sumKV)
	register.Function1x2(withUnit)
	register.Function2x1(keepOne)
	register.Function2x1(distinct)
	register.Function3x0(notIn)
}

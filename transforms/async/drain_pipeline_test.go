package async_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// TestPipelineEndOfInputDrain runs unbounded input whose source ends, on
// prism, in the global window and in fixed windows, with failures, retries
// and panics (flaky). With the commit timers silenced (as Flink's are at the
// end of input) only each key's ProcessElement commits, so every key ends
// holding its last elements: the drain must run them, each element's
// outputs or failure record exactly once, in its window. With the timers
// firing (prism's own behaviour) the drain finds nothing to run.
func TestPipelineEndOfInputDrain(t *testing.T) {
	for _, tc := range []struct {
		name            string
		silent, windows bool
	}{
		{"timers silenced, global window", true, false},
		{"timers silenced, fixed windows", true, true},
		{"timers firing", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const ticks, perTick, keys = 10, 20, 7
			interval := 50 * time.Millisecond
			scope := fmt.Sprintf("drain%v%v", tc.silent, tc.windows)
			if tc.silent {
				async.SilenceCommitTimers(t, scope)
			}
			p, s := beam.NewPipelineWithRoot()
			s = s.Scope(scope)
			start := time.Now() // ticks in real time: keys commit some elements before the end
			impulses := periodic.Impulse(s, start, start.Add(ticks*interval), interval, false)
			elems := beam.ParDo(s, &fanOut{PerTick: perTick, Keys: keys, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
			if tc.windows {
				elems = beam.WindowInto(s, window.NewFixedWindows(200*time.Millisecond), elems)
			}
			out, failures := async.ParDoWithFailures(s, &flaky{}, elems, async.WithParallelism(8), async.WithEndOfInputDrain(),
				async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(10*time.Millisecond)))
			described := beam.ParDo(s, describeFailure, failures)
			if tc.windows {
				out = beam.WindowInto(s, window.NewGlobalWindows(), out)
				described = beam.WindowInto(s, window.NewGlobalWindows(), described)
			}
			want, wantFailed := flakyWant(ticks*perTick, keys, false)
			passert.Equals(s, out, want...)
			passert.Equals(s, described, wantFailed...)
			res := ptest.RunAndValidate(t, p)
			counters, _ := guardCounters(res, scope)
			drained := counters[async.MetricDrained]
			t.Logf("drained %d of %d elements", drained, ticks*perTick)
			switch {
			case tc.silent && drained == 0:
				t.Errorf("metric %s = 0; want the elements the keys held at the end of input", async.MetricDrained)
			case !tc.silent && drained != 0:
				t.Errorf("metric %s = %d; want 0: prism fires the commit timers until every key is empty", async.MetricDrained, drained)
			}
		})
	}
}

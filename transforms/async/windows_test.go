package async

import (
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

// TestStateLivesInTheGlobalWindow: whatever the input's windowing, the
// transform's DoFn runs in the global window (its elements carry their
// windows), so no runner collects its pending elements with a window's state
// (Dataflow does when the input watermark passes the window's end), a key
// has one state and one timer for all its windows, and merging windows need
// no state; the outputs come back with the input's whole windowing strategy.
func TestStateLivesInTheGlobalWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   *window.Fn
	}{
		{"fixed", window.NewFixedWindows(time.Second)},
		{"sliding", window.NewSlidingWindows(time.Second, 2*time.Second)},
		{"sessions", window.NewSessions(time.Second)},
	} {
		for _, bounded := range []bool{true, false} {
			p, s := beam.NewPipelineWithRoot()
			var kv beam.PCollection
			if bounded {
				kv = beam.ParDo(s, func(v int) (string, int) { return "k", v }, beam.Create(s, 1, 2))
			} else {
				now := time.Now()
				kv = beam.ParDo(s, func(_ []byte) (string, int) { return "k", 1 }, periodic.Impulse(s, now, now.Add(time.Second), time.Second, false))
			}
			in := beam.WindowInto(s, tc.fn, kv, beam.Trigger(trigger.AfterEndOfWindow().EarlyFiring(trigger.AfterCount(3))), beam.PanesAccumulate(), beam.AllowedLateness(5*time.Second))
			out, failures := ParDoWithFailures(s, &gated{}, in)
			edges, _, err := p.Build()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range edges {
				if e.Op != graph.ParDo {
					continue
				}
				switch e.DoFn.Recv.(type) {
				case *streamFn, *bundleFn, *keyedBundleFn:
					found = true
					if kind := e.Input[0].From.WindowingStrategy().Fn.Kind; kind != window.GlobalWindows {
						t.Errorf("%s (bounded %v): the transform's DoFn runs in %v windows, want the global window", tc.name, bounded, kind)
					}
				}
			}
			if !found {
				t.Errorf("%s (bounded %v): no DoFn of the transform in the graph", tc.name, bounded)
			}
			want := in.WindowingStrategy()
			for name, col := range map[string]beam.PCollection{"output": out, "failures": failures} {
				got := col.WindowingStrategy()
				if !got.Fn.Equals(want.Fn) || got.AccumulationMode != want.AccumulationMode || got.AllowedLateness != want.AllowedLateness || !reflect.DeepEqual(got.Trigger, want.Trigger) {
					t.Errorf("%s (bounded %v): %s windowing = %+v, want the input's %+v", tc.name, bounded, name, *got, *want)
				}
			}
		}
	}
}

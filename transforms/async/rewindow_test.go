package async

import (
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
)

// TestFixedWindowsKeepTheirStrategy: bounded input in fixed windows goes
// through the global window, and its outputs come back with the input's
// whole windowing strategy: fn, trigger, accumulation and allowed lateness.
func TestFixedWindowsKeepTheirStrategy(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	kv := beam.ParDo(s, func(v int) (string, int) { return "k", v }, beam.Create(s, 1, 2))
	in := beam.WindowInto(s, window.NewFixedWindows(time.Minute), kv,
		beam.Trigger(trigger.AfterEndOfWindow().EarlyFiring(trigger.AfterCount(3))), beam.PanesAccumulate(), beam.AllowedLateness(5*time.Second))
	if !rewindowsByTime(in) {
		t.Fatal("bounded input in fixed windows does not take the global-window path")
	}
	out, failures := ParDoWithFailures(s, &gated{}, in)
	want := in.WindowingStrategy()
	for name, col := range map[string]beam.PCollection{"output": out, "failures": failures} {
		got := col.WindowingStrategy()
		if !got.Fn.Equals(want.Fn) || got.AccumulationMode != want.AccumulationMode || got.AllowedLateness != want.AllowedLateness || !reflect.DeepEqual(got.Trigger, want.Trigger) {
			t.Errorf("%s windowing = %+v (trigger %v), want the input's %+v (trigger %v)", name, *got, got.Trigger, *want, want.Trigger)
		}
	}
}

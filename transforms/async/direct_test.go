package async_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// TestOnBeamsDirectRunner pins down what the README says happens when a
// user calls Beam's legacy Go direct runner themselves (outside runner.Run,
// which runs --runner=direct on prism): bounded input without WithOrdered,
// in any windowing, runs, since that path has no state; a path with state
// (WithOrdered; unbounded input, which that runner cannot read) fails the
// pipeline with Beam's nil-pointer error, returned by direct.Execute, before
// the wrapped fn is called. Outputs are counted per window (stamp observes
// it), so an element in two sliding windows counts twice.
func TestOnBeamsDirectRunner(t *testing.T) {
	tests := []struct {
		name    string
		ordered bool
		windows *window.Fn
		perElem int
		wantErr string
	}{
		{name: "global window", perElem: 1},
		{name: "fixed windows", windows: window.NewFixedWindows(time.Minute), perElem: 1},
		{name: "sliding windows", windows: window.NewSlidingWindows(30*time.Second, time.Minute), perElem: 2},
		{name: "session windows", windows: window.NewSessions(time.Minute), perElem: 1},
		{name: "WithOrdered", ordered: true, perElem: 1, wantErr: "nil pointer dereference"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			in := input(s, 40, 4)
			if tc.windows != nil {
				in = beam.WindowInto(s, tc.windows, in)
			}
			var opts []async.Option
			if tc.ordered {
				opts = append(opts, async.WithOrdered())
			}
			out := async.ParDo(s, &slowLabel{SleepMs: 1}, in, opts...)
			passert.Count(s, beam.WindowInto(s, window.NewGlobalWindows(), beam.ParDo(s, stamp{}, out)), "outputs", 40*tc.perElem)
			_, err := direct.Execute(context.Background(), p)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("direct.Execute = %v, want success", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("direct.Execute = %v, want an error with %q (as the README says)", err, tc.wantErr)
			}
		})
	}
}

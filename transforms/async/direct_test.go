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
// which runs --runner=direct on prism): bounded input in the global window
// or in fixed windows, without WithOrdered, runs, since that path has no
// state; any path with state fails the pipeline with Beam's nil-pointer
// error, returned by direct.Execute, before the wrapped fn is called.
func TestOnBeamsDirectRunner(t *testing.T) {
	tests := []struct {
		name    string
		ordered bool
		windows *window.Fn
		wantErr string
	}{
		{name: "global window", wantErr: ""},
		{name: "fixed windows", windows: window.NewFixedWindows(time.Minute), wantErr: ""},
		{name: "WithOrdered", ordered: true, wantErr: "nil pointer dereference"},
		{name: "sliding windows", windows: window.NewSlidingWindows(30*time.Second, time.Minute), wantErr: "nil pointer dereference"},
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
			passert.Count(s, beam.WindowInto(s, window.NewGlobalWindows(), out), "outputs", 40)
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

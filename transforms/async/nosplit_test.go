package async_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"

	"github.com/asyncbeam/asyncbeam/runner/nosplit"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// TestBuildTurnsOffPrismSplits checks that building a transform adds
// prism's experiment against bundle splits (package nosplit) where the
// runner may be prism, and leaves Dataflow's flags alone. (The job-server
// runners are nosplit.Wanted's: building for them here would install the
// portable dialer for the rest of the package's tests.)
func TestBuildTurnsOffPrismSplits(t *testing.T) {
	runner, exps := *runners.Runner, *jobopts.Experiments
	defer func() { *runners.Runner, *jobopts.Experiments = runner, exps }()
	for _, tc := range []struct {
		runner string
		want   bool
	}{
		{"", true},
		{"prism", true},
		{"dataflow", false},
	} {
		*runners.Runner, *jobopts.Experiments = tc.runner, ""
		_, s := beam.NewPipelineWithRoot()
		if _, err := async.TryParDo(s, &slowLabel{}, input(s, 3, 1)); err != nil {
			t.Fatalf("--runner=%q: %v", tc.runner, err)
		}
		got := slices.Contains(strings.Split(*jobopts.Experiments, ","), nosplit.Experiment)
		if got != tc.want {
			t.Errorf("--runner=%q: after building, --experiments=%q; has %s: %v, want %v", tc.runner, *jobopts.Experiments, nosplit.Experiment, got, tc.want)
		}
	}
}

package nosplit

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
)

func TestWanted(t *testing.T) {
	for _, tc := range []struct {
		runner string
		want   bool
	}{
		{"", true},
		{"prism", true},
		{"PrismRunner", true},
		{" Prism ", true},
		{"direct", true},
		{"universal", true},
		{"portable", true},
		{"dataflow", false},
		{"DataflowRunner", false},
		{"flink", false},
		{"spark", false},
		{"samza", false},
	} {
		if got := Wanted(tc.runner); got != tc.want {
			t.Errorf("Wanted(%q) = %v, want %v", tc.runner, got, tc.want)
		}
	}
}

func TestAdd(t *testing.T) {
	for _, tc := range []struct {
		exps, want string
		added      bool
	}{
		{"", Experiment, true},
		{"  ", Experiment, true},
		{"use_runner_v2", "use_runner_v2," + Experiment, true},
		{Experiment, Experiment, false},
		{"a," + Experiment + ",b", "a," + Experiment + ",b", false},
		{Experiment + "_not", Experiment + "_not," + Experiment, true},
	} {
		exps := tc.exps
		added := add(&exps)
		if exps != tc.want || added != tc.added {
			t.Errorf("add(%q) = %q, %v; want %q, %v", tc.exps, exps, added, tc.want, tc.added)
		}
	}
}

// TestUse checks Use against the flags themselves: it adds the experiment
// once for prism, and nothing for Dataflow.
func TestUse(t *testing.T) {
	runner, exps := *runners.Runner, *jobopts.Experiments
	defer func() { *runners.Runner, *jobopts.Experiments = runner, exps }()
	for _, tc := range []struct {
		runner, exps, want string
	}{
		{"prism", "", Experiment},
		{"universal", "x", "x," + Experiment},
		{"dataflow", "x", "x"},
	} {
		*runners.Runner, *jobopts.Experiments = tc.runner, tc.exps
		Use()
		Use()
		if got := *jobopts.Experiments; got != tc.want {
			t.Errorf("--runner=%s --experiments=%q, Use twice: --experiments=%q, want %q", tc.runner, tc.exps, got, tc.want)
		}
		if n := strings.Count(*jobopts.Experiments, Experiment); tc.runner != "dataflow" && n != 1 {
			t.Errorf("--runner=%s: the experiment appears %d times, want once", tc.runner, n)
		}
	}
}

package async_test

import (
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// TestTransformsSetPrismExperiment: building a transform adds the
// experiment prism needs to --experiments, once, when the runner is prism
// (as beamx.Run and ptest pick it), and leaves other runners' flags alone.
func TestTransformsSetPrismExperiment(t *testing.T) {
	defer func(r, e string) { *runners.Runner, *jobopts.Experiments = r, e }(*runners.Runner, *jobopts.Experiments)
	build := func(batch bool) {
		_, s := beam.NewPipelineWithRoot()
		if batch {
			async.BatchParDo(s, &upperBatch{}, beam.ParDo(s, keyedBySelf, beam.Create(s, "a")))
			return
		}
		async.ParDo(s, &slowLabel{}, input(s, 1, 1))
	}
	tests := []struct {
		runner, experiments string
		batch               bool
		want                string
	}{
		{"", "", false, async.PrismExperiment},
		{"prism", "", true, async.PrismExperiment},
		{"direct", "beam_fn_api", false, "beam_fn_api," + async.PrismExperiment},
		{"Prism", async.PrismExperiment, false, async.PrismExperiment},
		{"PrismRunner", "", false, async.PrismExperiment},
		{"prism", "a," + async.PrismExperiment + ",b", false, "a," + async.PrismExperiment + ",b"},
		{"dataflow", "", false, ""},
		{"universal", "beam_fn_api", false, "beam_fn_api"},
	}
	for _, tc := range tests {
		*runners.Runner, *jobopts.Experiments = tc.runner, tc.experiments
		build(tc.batch)
		build(tc.batch) // idempotent
		if got := *jobopts.Experiments; got != tc.want {
			t.Errorf("--runner=%q --experiments=%q: after building a transform, experiments %q; want %q", tc.runner, tc.experiments, got, tc.want)
		}
	}

	// Transforms built at once add it once.
	*runners.Runner, *jobopts.Experiments = "", ""
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			build(i%2 == 0)
		}()
	}
	wg.Wait()
	if got := *jobopts.Experiments; got != async.PrismExperiment {
		t.Errorf("after 8 transforms built at once, experiments %q; want %q", got, async.PrismExperiment)
	}
}

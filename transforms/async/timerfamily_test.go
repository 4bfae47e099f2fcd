package async

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// TestChainedTransformsTimerFamilies: two async transforms of one scope
// name declare timer families of their own, for the stream and the drain.
func TestChainedTransformsTimerFamilies(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	first := streamFamilies(t, s)
	second := streamFamilies(t, s)
	if first[0] == second[0] || first[1] == second[1] {
		t.Errorf("families %q and %q; want each transform's own", first, second)
	}
}

// streamFamilies builds the unbounded path's DoFns of a transform in scope
// s and returns their timer families.
func streamFamilies(t *testing.T, s beam.Scope) [2]string {
	t.Helper()
	cfg := defaultConfig(t, s)
	c := worker.Core{Config: cfg}
	return [2]string{newStreamFn(c).Commit.Family, newEscrowFn(c).Drain.Family}
}

// defaultConfig is the config of a transform in scope s over string keys
// and values, built with no options.
func defaultConfig(t *testing.T, s beam.Scope) terms.Config {
	t.Helper()
	set, err := resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := newConfig(s.Scope("async.ParDo").String(), wrapped.Spec{}, stringKey, stringKey, set, false)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

package async

import (
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"

	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// TestTimerSuffix: transforms of one scope name get suffixes of their own,
// and the same order of builds gives the same suffixes.
func TestTimerSuffix(t *testing.T) {
	familySuffixes.Lock()
	saved := familySuffixes.built
	familySuffixes.built = nil
	familySuffixes.Unlock()
	defer func() {
		familySuffixes.Lock()
		familySuffixes.built = saved
		familySuffixes.Unlock()
	}()
	first := []string{timerSuffix("root/async.ParDo"), timerSuffix("root/async.ParDo"), timerSuffix("root/other")}
	if first[0] == first[1] || first[0] == first[2] || first[1] == first[2] {
		t.Errorf("suffixes %q; want three different ones", first)
	}
	familySuffixes.Lock()
	familySuffixes.built = nil // a new process
	familySuffixes.Unlock()
	again := []string{timerSuffix("root/async.ParDo"), timerSuffix("root/async.ParDo"), timerSuffix("root/other")}
	for i := range first {
		if first[i] != again[i] {
			t.Errorf("build %d: suffix %q, then %q in a new process; want the same", i, first[i], again[i])
		}
	}
}

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
	set, err := resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := newConfig(s.Scope("async.ParDo").String(), wrapped.Spec{}, stringKey, stringKey, set, false)
	if err != nil {
		t.Fatal(err)
	}
	c := core{config: cfg}
	return [2]string{newStreamFn(c).Commit.Family, newEscrowFn(c).Drain.Family}
}

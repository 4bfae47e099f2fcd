package terms

import "testing"

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
	first := []string{TimerSuffix("root/async.ParDo"), TimerSuffix("root/async.ParDo"), TimerSuffix("root/other")}
	if first[0] == first[1] || first[0] == first[2] || first[1] == first[2] {
		t.Errorf("suffixes %q; want three different ones", first)
	}
	familySuffixes.Lock()
	familySuffixes.built = nil // a new process
	familySuffixes.Unlock()
	again := []string{TimerSuffix("root/async.ParDo"), TimerSuffix("root/async.ParDo"), TimerSuffix("root/other")}
	for i := range first {
		if first[i] != again[i] {
			t.Errorf("build %d: suffix %q, then %q in a new process; want the same", i, first[i], again[i])
		}
	}
}

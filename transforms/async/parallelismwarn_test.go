package async

import (
	"strings"
	"testing"

	"github.com/asyncbeam/asyncbeam/transforms/guard"
)

func TestParallelismWarning(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        int
		adaptive bool
		s        guard.Stats
		want     string // a part of the warning, or "" for none
	}{
		{"far above, refusing", 5000, false, guard.Stats{AcceptedAtOnce: 15.2, RefusedShare: 0.2}, "accepted about 16 at once"},
		{"advice names both options", 5000, false, guard.Stats{AcceptedAtOnce: 15.2, RefusedShare: 0.2}, "Set WithParallelism near 16, or WithAdaptiveParallelism(1, 5000)"},
		{"at the service's limit", 16, false, guard.Stats{AcceptedAtOnce: 13, RefusedShare: 0.17}, ""},
		{"just under four times", 63, false, guard.Stats{AcceptedAtOnce: 16, RefusedShare: 0.2}, ""},
		{"four times", 64, false, guard.Stats{AcceptedAtOnce: 16, RefusedShare: 0.2}, "refused 20%"},
		{"random refusals at a low rate", 16, false, guard.Stats{AcceptedAtOnce: 0.2, RefusedShare: 0.05}, ""},
		{"no answers yet", 5000, false, guard.Stats{}, ""},
		{"refusals, none accepted", 5000, false, guard.Stats{RefusedShare: 1}, ""},
		{"adaptive follows the service", 5000, true, guard.Stats{AcceptedAtOnce: 15, RefusedShare: 0.3}, ""},
	} {
		got := parallelismWarning("t", tc.p, tc.adaptive, tc.s)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: parallelismWarning(p=%d, adaptive=%v, %+v) = %q; want one containing %q", tc.name, tc.p, tc.adaptive, tc.s, got, tc.want)
		}
	}
}

package async

import (
	"strings"
	"testing"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
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
		{"far above, refusing", 5000, false, guard.Stats{AcceptedAtOnce: 15.2, RefusedShare: 0.2, AtServiceWhenRefused: 900}, "accepted about 16 at once"},
		{"advice names both options", 5000, false, guard.Stats{AcceptedAtOnce: 15.2, RefusedShare: 0.2, AtServiceWhenRefused: 900}, "Set WithParallelism near 16, or WithAdaptiveParallelism(1, 5000)"},
		{"at the service's limit", 16, false, guard.Stats{AcceptedAtOnce: 13, RefusedShare: 0.17, AtServiceWhenRefused: 16}, ""},
		{"just under four times", 63, false, guard.Stats{AcceptedAtOnce: 16, RefusedShare: 0.2, AtServiceWhenRefused: 63}, ""},
		{"four times", 64, false, guard.Stats{AcceptedAtOnce: 16, RefusedShare: 0.2, AtServiceWhenRefused: 64}, "refused 20%"},
		{"refusals at the usual crowd: at random, not for the calls at once", 64, false, guard.Stats{AcceptedAtOnce: 1, RefusedShare: 0.2, AtServiceWhenRefused: 1.5}, ""},
		{"refusals in a crowd twice what it accepts", 64, false, guard.Stats{AcceptedAtOnce: 1, RefusedShare: 0.2, AtServiceWhenRefused: 2}, "accepted about 1 at once"},
		{"an unnamed transform", 64, false, guard.Stats{AcceptedAtOnce: 16, RefusedShare: 0.2, AtServiceWhenRefused: 64}, "async: a transform runs"},
		{"random refusals at a low rate", 16, false, guard.Stats{AcceptedAtOnce: 0.2, RefusedShare: 0.05, AtServiceWhenRefused: 1}, ""},
		{"no answers yet", 5000, false, guard.Stats{}, ""},
		{"refusals, none accepted", 5000, false, guard.Stats{RefusedShare: 1}, ""},
		{"adaptive follows the service", 5000, true, guard.Stats{AcceptedAtOnce: 15, RefusedShare: 0.3, AtServiceWhenRefused: 900}, ""},
	} {
		name := "t"
		if tc.name == "an unnamed transform" {
			name = ""
		}
		got := worker.ParallelismWarning(name, tc.p, tc.adaptive, tc.s)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: parallelismWarning(p=%d, adaptive=%v, %+v) = %q; want one containing %q", tc.name, tc.p, tc.adaptive, tc.s, got, tc.want)
		}
	}
}

package runner

import (
	"strings"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

func TestCheckFlinkRevert(t *testing.T) {
	tests := []struct {
		marked    int
		streaming bool
		interval  time.Duration
		batchOK   bool
		wantErr   string
	}{
		{0, true, 0, false, ""},
		{0, false, 0, false, ""},
		{0, true, 30 * time.Second, false, ""},
		{1, true, 30 * time.Second, false, ""},
		{1, true, time.Millisecond, false, ""},
		{2, true, 0, false, "2 revert step(s) require stable input"},
		{2, true, 0, true, "2 revert step(s) require stable input"}, // batchOK is for batch mode only
		{1, false, 0, false, "batch mode, which ignores stable input"},
		{1, false, 30 * time.Second, false, "batch mode, which ignores stable input"},
		{1, false, 0, true, ""},
		{0, true, -time.Second, false, "want 1ms or more"},
		{1, true, -time.Second, false, "want 1ms or more"},
		{1, true, 500 * time.Microsecond, false, "want 1ms or more"}, // 0 ms, which Flink refuses
	}
	for _, tc := range tests {
		err := checkFlinkRevert(tc.marked, tc.streaming, tc.interval, tc.batchOK)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("checkFlinkRevert(%d, %v, %v, %v) = %v; want nil", tc.marked, tc.streaming, tc.interval, tc.batchOK, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("checkFlinkRevert(%d, %v, %v, %v) = %v; want an error with %q", tc.marked, tc.streaming, tc.interval, tc.batchOK, err, tc.wantErr)
		}
	}
}

// TestJobOptions: the checkpoint interval goes at the top level of the
// job's options, in milliseconds, where Flink's Java options read it (Beam
// Go's own flags go under go_options, which they do not), and only when
// set; with it, the stable-input drain is switched on.
func TestJobOptions(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		want     float64 // 0: absent
	}{
		{0, 0},
		{30 * time.Second, 30000},
		{1500 * time.Millisecond, 1500},
	} {
		opts, err := jobOptions("job", tc.interval)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := opts.Fields["beam:option:go_options:v1"]; !ok {
			t.Errorf("interval %v: no go_options in %v; want Beam Go's options kept", tc.interval, opts)
		}
		v, ok := opts.Fields[checkpointingOption]
		switch {
		case tc.want == 0 && ok:
			t.Errorf("interval %v: %s = %v; want it absent", tc.interval, checkpointingOption, v)
		case tc.want != 0 && (!ok || v.GetNumberValue() != tc.want):
			t.Errorf("interval %v: %s = %v (set %v); want %v", tc.interval, checkpointingOption, v, ok, tc.want)
		}
		drain, ok := opts.Fields[stableDrainOption]
		if got, want := ok && drain.GetBoolValue(), tc.want != 0; got != want || (ok && !want) {
			t.Errorf("interval %v: %s = %v (set %v); want it true exactly when the interval is set", tc.interval, stableDrainOption, drain, ok)
		}
	}
}

func TestHasUnbounded(t *testing.T) {
	model := func(bounded ...pipepb.IsBounded_Enum) *pipepb.Pipeline {
		p := &pipepb.Pipeline{Components: &pipepb.Components{Pcollections: map[string]*pipepb.PCollection{}}}
		for i, b := range bounded {
			p.Components.Pcollections[string(rune('a'+i))] = &pipepb.PCollection{IsBounded: b}
		}
		return p
	}
	for _, tc := range []struct {
		p    *pipepb.Pipeline
		want bool
	}{
		{model(), false},
		{model(pipepb.IsBounded_BOUNDED, pipepb.IsBounded_BOUNDED), false},
		{model(pipepb.IsBounded_BOUNDED, pipepb.IsBounded_UNBOUNDED), true},
	} {
		if got := hasUnbounded(tc.p); got != tc.want {
			t.Errorf("hasUnbounded(%v) = %v; want %v", tc.p.GetComponents().GetPcollections(), got, tc.want)
		}
	}
}

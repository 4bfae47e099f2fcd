package runner

import (
	"strings"
	"testing"
	"time"
)

func TestCheckCheckpointing(t *testing.T) {
	tests := []struct {
		marked   int
		interval time.Duration
		wantErr  string
	}{
		{0, 0, ""},
		{0, 30 * time.Second, ""},
		{1, 30 * time.Second, ""},
		{2, 0, "2 revert step(s) require stable input"},
		{0, -time.Second, "want > 0"},
		{1, -time.Second, "require stable input"},
	}
	for _, tc := range tests {
		err := checkCheckpointing(tc.marked, tc.interval)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("checkCheckpointing(%d, %v) = %v; want nil", tc.marked, tc.interval, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("checkCheckpointing(%d, %v) = %v; want an error with %q", tc.marked, tc.interval, err, tc.wantErr)
		}
	}
}

// TestJobOptions: the checkpoint interval goes at the top level of the
// job's options, in milliseconds, where Flink's Java options read it (Beam
// Go's own flags go under go_options, which they do not), and only when
// set.
func TestJobOptions(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		want     float64 // 0: absent
	}{
		{0, 0},
		{30 * time.Second, 30000},
		{1500 * time.Millisecond, 1500},
	} {
		opts, err := jobOptions(tc.interval)
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
	}
}

package portable

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestParseOption(t *testing.T) {
	for _, tc := range []struct {
		in       string
		wantName string
		want     any // float64, bool, string, []any; nil: an error
	}{
		{"max_bundle_size=500", "max_bundle_size", 500.0},
		{"streaming=false", "streaming", false},
		{"flink_master=localhost:8081", "flink_master", "localhost:8081"},
		{"checkpointing_mode=EXACTLY_ONCE", "checkpointing_mode", "EXACTLY_ONCE"},
		{`experiments=["a","b"]`, "experiments", []any{"a", "b"}},
		{`job_name="quoted"`, "job_name", "quoted"},
		{"flink_version=1.10", "flink_version", 1.1},
		{`flink_version="1.10"`, "flink_version", "1.10"},
		{"x=inf", "x", "inf"}, // not a JSON number: text
		{"x=NaN", "x", "NaN"},
		{"parallelism=-1", "parallelism", -1.0},
		{"empty=", "empty", ""},
		{"MaxBundleSize=1", "", nil}, // camelCase: not the job option form
		{"no_value", "", nil},
		{"=1", "", nil},
		{"a b=1", "", nil},
	} {
		name, v, err := parseOption(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("parseOption(%q) = %s, %v; want an error", tc.in, name, v)
			}
			continue
		}
		if err != nil || name != tc.wantName {
			t.Errorf("parseOption(%q) = %q, %v; want %q", tc.in, name, err, tc.wantName)
			continue
		}
		want, _ := structpb.NewValue(tc.want)
		if got := v.AsInterface(); valueText(v) != valueText(want) {
			t.Errorf("parseOption(%q) value = %v; want %v", tc.in, got, tc.want)
		}
	}
}

// TestTopLevel: what each job sends at the top level of its options.
func TestTopLevel(t *testing.T) {
	flinkStreaming := map[string]string{"streaming": "true", "shutdown_sources_after_idle_ms": "15000", "finish_bundle_before_checkpointing": "true"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		kind      Kind
		streaming bool
		interval  time.Duration
		user      []string
		want      map[string]string
		wantErr   string
	}{
		{name: "flink batch", kind: Flink, want: map[string]string{}},
		{name: "flink streaming", kind: Flink, streaming: true, want: flinkStreaming},
		{name: "flink checkpoints", kind: Flink, streaming: true, interval: 5 * time.Second,
			want: with(flinkStreaming, "checkpointing_interval", "5000", "enable_stable_input_drain", "true")},
		{name: "flink batch checkpoints", kind: Flink, interval: time.Second,
			want: map[string]string{"checkpointing_interval": "1000", "enable_stable_input_drain": "true"}},
		{name: "user wins", kind: Flink, streaming: true, user: []string{"shutdown_sources_after_idle_ms=60000", "max_bundle_size=100"},
			want: with(flinkStreaming, "shutdown_sources_after_idle_ms", "60000", "max_bundle_size", "100")},
		{name: "short interval, buffered", kind: Flink, streaming: true, interval: time.Second, user: []string{"finish_bundle_before_checkpointing=false"},
			wantErr: "leave finish_bundle_before_checkpointing on"},
		{name: "long interval, buffered", kind: Flink, streaming: true, interval: 5 * time.Second, user: []string{"finish_bundle_before_checkpointing=false"},
			want: with(flinkStreaming, "checkpointing_interval", "5000", "enable_stable_input_drain", "true", "finish_bundle_before_checkpointing", "false")},
		{name: "short bundles, buffered", kind: Flink, streaming: true, interval: time.Second,
			user: []string{"finish_bundle_before_checkpointing=false", "max_bundle_time_mills=200"},
			want: with(flinkStreaming, "checkpointing_interval", "1000", "enable_stable_input_drain", "true",
				"finish_bundle_before_checkpointing", "false", "max_bundle_time_mills", "200")},
		{name: "other runner: only the user's", kind: Unknown, streaming: true, interval: time.Second, user: []string{"max_bundle_size=7"},
			want: map[string]string{"max_bundle_size": "7"}},
		{name: "bad interval", kind: Flink, interval: time.Microsecond, wantErr: "want 1ms or more"},
		{name: "bad option", kind: Flink, user: []string{"x"}, wantErr: "want name=value"},
		{name: "experiments refused", kind: Unknown, user: []string{`experiments=["a"]`}, wantErr: "pass experiments with --experiments"},
	} {
		got, err := topLevel(tc.kind, tc.streaming, tc.interval, tc.user)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: topLevel = %v, %v; want an error with %q", tc.name, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: topLevel: %v", tc.name, err)
			continue
		}
		gotText := map[string]string{}
		for k, v := range got {
			gotText[k] = valueText(v)
		}
		if len(gotText) != len(tc.want) {
			t.Errorf("%s: topLevel = %v; want %v", tc.name, gotText, tc.want)
			continue
		}
		for k, v := range tc.want {
			if gotText[k] != v {
				t.Errorf("%s: topLevel[%s] = %q; want %q (all: %v)", tc.name, k, gotText[k], v, gotText)
			}
		}
	}
}

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want Kind
	}{
		{"flink", Flink}, {"FlinkRunner", Flink}, {"spark", Spark}, {"SparkRunner", Spark},
		{"universal", Unknown}, {"portable", Unknown}, {"prism", Unknown}, {"", Unknown},
	} {
		if got := KindOfFlag(tc.flag); got != tc.want {
			t.Errorf("KindOfFlag(%q) = %q; want %q", tc.flag, got, tc.want)
		}
	}
	for _, tc := range []struct {
		names []string
		want  Kind
	}{
		{[]string{"job_name", "flink_master", "streaming"}, Flink},
		{[]string{"spark_master_url"}, Spark},
		{nil, Unknown}, // prism describes no options
		{[]string{"runner", "streaming"}, Unknown},
	} {
		if got := kindOfOptions(tc.names); got != tc.want {
			t.Errorf("kindOfOptions(%v) = %q; want %q", tc.names, got, tc.want)
		}
	}
}

func TestCheckStableInput(t *testing.T) {
	tests := []struct {
		marked    int
		streaming bool
		interval  time.Duration
		batchOK   bool
		wantErr   string
	}{
		{0, true, 0, false, ""},
		{0, false, 0, false, ""},
		{1, true, 30 * time.Second, false, ""},
		{2, true, 0, false, "2 revert step(s) require stable input"},
		{2, true, 0, true, "2 revert step(s) require stable input"}, // batchOK is for batch mode only
		{1, false, 0, false, "batch mode, which ignores stable input"},
		{1, false, 30 * time.Second, false, "batch mode, which ignores stable input"},
		{1, false, 0, true, ""},
	}
	for _, tc := range tests {
		err := CheckStableInput(tc.marked, Job{Runner: Flink, Streaming: tc.streaming, Checkpointing: tc.interval, BatchRevert: tc.batchOK})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("CheckStableInput(%+v) = %v; want nil", tc, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("CheckStableInput(%+v) = %v; want an error with %q", tc, err, tc.wantErr)
		}
	}
}

// TestCheckpointingOf: a checkpoint interval given as a runner option counts
// as one given by flag, which wins.
func TestCheckpointingOf(t *testing.T) {
	for _, tc := range []struct {
		flag time.Duration
		user []string
		want time.Duration
	}{
		{0, nil, 0},
		{5 * time.Second, nil, 5 * time.Second},
		{0, []string{"checkpointing_interval=7000"}, 7 * time.Second},
		{5 * time.Second, []string{"checkpointing_interval=7000"}, 5 * time.Second},
		{0, []string{"checkpointing_interval=soon"}, 0},
	} {
		if got := checkpointingOf(tc.flag, tc.user); got != tc.want {
			t.Errorf("checkpointingOf(%v, %q) = %v; want %v", tc.flag, tc.user, got, tc.want)
		}
	}
	opts, err := topLevel(Flink, true, checkpointingOf(0, []string{"checkpointing_interval=7000"}), []string{"checkpointing_interval=7000"})
	if err != nil {
		t.Fatal(err)
	}
	if v := opts[optStableInputDrain]; v == nil || !v.GetBoolValue() {
		t.Errorf("a job checkpointing by runner option sends %s = %v; want true", optStableInputDrain, v)
	}
}

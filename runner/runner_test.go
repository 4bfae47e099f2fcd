package runner

import (
	"flag"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx" // registers the runners' flags
)

func TestCheck(t *testing.T) {
	old := *runners.Runner
	defer func() { *runners.Runner = old }()
	tests := []struct {
		flag, wantName string
		wantErr        bool
	}{
		{"", "prism", false},
		{"prism", "prism", false},
		{"PrismRunner", "prism", false},
		{"direct", "prism", false},
		{"DirectRunner", "prism", false},
		{"portable", "portable", true}, // no --endpoint
		{"PortableRunner", "portablerunner", true},
		{"FlinkRunner", "flinkrunner", true}, // no --endpoint: Run sends it to RunPortable
		{"SparkRunner", "sparkrunner", true},
		{"Prism", "prism", false},
	}
	for _, tc := range tests {
		*runners.Runner = tc.flag
		if got := Name(); got != tc.wantName {
			t.Errorf("Name() with --runner=%q = %q, want %q", tc.flag, got, tc.wantName)
		}
		err := Check()
		if (err != nil) != tc.wantErr {
			t.Errorf("Check() with --runner=%q = %v, want error %v", tc.flag, err, tc.wantErr)
		}
	}
}

// TestRegisteredName: a runner name Check takes in any case is spelled as
// Beam registers it before beam.Run looks it up.
func TestRegisteredName(t *testing.T) {
	defer func(r string) { *runners.Runner = r }(*runners.Runner)
	for _, tc := range []struct{ flag, want string }{
		{"Prism", "prism"},
		{"PRISM", "prism"},
		{"Dataflow", "dataflow"},
		{"dataflowrunner", "DataflowRunner"},
		{"", ""}, // the default, left to Beam
		{"myrunner", "myrunner"},
	} {
		*runners.Runner = tc.flag
		useRegisteredName()
		if got := *runners.Runner; got != tc.want {
			t.Errorf("--runner=%q: beam.Run gets %q, want %q", tc.flag, got, tc.want)
		}
	}
}

// TestDirectRunsOnPrism: --runner=direct is replaced by prism.
func TestDirectRunsOnPrism(t *testing.T) {
	defer func(r string) { *runners.Runner = r }(*runners.Runner)
	for _, name := range []string{"direct", "DirectRunner"} {
		*runners.Runner = name
		useLocalRunner()
		if got := Name(); got != "prism" {
			t.Errorf("--runner=%s runs on %q, want prism", name, got)
		}
	}
}

// TestCheckRefusesAsyncWithoutAWorker: --async is refused where the job's
// worker or runner would stop when Run returns (LOOPBACK, embedded prism),
// and passes where both run on their own.
func TestCheckRefusesAsyncWithoutAWorker(t *testing.T) {
	defer func(r, ep, env string, async bool) {
		*runners.Runner, *jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.Async = r, ep, env, async
	}(*runners.Runner, *jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.Async)
	tests := []struct {
		runner, endpoint, env string
		async, wantErr        bool
	}{
		{"prism", "", "", false, false},
		{"prism", "", "", true, true},        // embedded: LOOPBACK by default
		{"", "", "", true, true},             // the default runner is embedded prism
		{"direct", "", "", true, true},       // runs on embedded prism
		{"PrismRunner", "", "", true, true},  // Beam's other name for prism
		{"prism", "", "PROCESS", true, true}, // embedded prism stops with the program
		{"dataflow", "", "", true, false},
		{"prism", "localhost:8073", "", true, false}, // a prism job server; the worker is DOCKER by default
		{"prism", "localhost:8073", "LOOPBACK", true, true},
		{"universal", "localhost:8099", "loopback", true, true},
		{"universal", "localhost:8099", "loopback", false, false},
		{"universal", "localhost:8099", "EXTERNAL", true, false},
		{"flink", "localhost:8099", "LOOPBACK", true, true},
	}
	for _, tc := range tests {
		*runners.Runner, *jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.Async = tc.runner, tc.endpoint, tc.env, tc.async
		err := checkAsync()
		if (err != nil) != tc.wantErr {
			t.Errorf("checkAsync() with --runner=%q --endpoint=%q --environment_type=%q --async=%v = %v, want error %v",
				tc.runner, tc.endpoint, tc.env, tc.async, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "drop --async") {
			t.Errorf("checkAsync() error %q does not name the fix", err)
		}
	}
	// Check refuses it too, before the runner's own flags.
	*runners.Runner, *jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.Async = "prism", "", "", true
	if err := Check(); err == nil || !strings.Contains(err.Error(), "drop --async") {
		t.Errorf("Check() with --async on embedded prism = %v, want the refusal", err)
	}
}

func TestCheckNamesMissingDataflowFlag(t *testing.T) {
	old := *runners.Runner
	defer func() { *runners.Runner = old }()
	*runners.Runner = "dataflow"
	set := func(name, v string) {
		if err := flag.Set(name, v); err != nil {
			t.Fatalf("flag.Set(%s): %v", name, err)
		}
	}
	defer func() {
		for _, n := range []string{"project", "region", "staging_location", "temp_location"} {
			flag.Set(n, "")
		}
	}()
	steps := []struct{ set, wantMissing string }{
		{"", "--project"}, {"project", "--region"}, {"region", "--staging_location"}, {"staging_location", "--temp_location"}, {"temp_location", ""},
	}
	for _, st := range steps {
		if st.set != "" {
			set(st.set, "x")
		}
		err := Check()
		if st.wantMissing == "" {
			if err != nil {
				t.Errorf("Check() with every Dataflow flag set = %v, want nil", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), st.wantMissing) {
			t.Errorf("Check() after setting %q = %v, want an error naming %s", st.set, err, st.wantMissing)
		}
	}
}

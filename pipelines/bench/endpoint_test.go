package main

import (
	"slices"
	"strings"
	"testing"
)

func TestChooseExternal(t *testing.T) {
	const ep = "localhost:8099"
	for _, tt := range []struct {
		name          string
		set           map[string]string
		processSuites []string
		want          external
		wantErr       string // a part of the error; "" for none
	}{
		{"no flags: prism of the bench's", nil, nil, external{}, ""},
		{"--prism without an endpoint", map[string]string{"prism": "jobserver"}, nil, external{}, ""},
		{"process suites without an endpoint", nil, []string{"service (leave it out of --suites)"}, external{}, ""},
		{"an endpoint: universal by default", map[string]string{"endpoint": ep}, nil, external{ep, "universal"}, ""},
		{"the runner as given", map[string]string{"endpoint": ep, "runner": "FlinkRunner"}, nil, external{ep, "FlinkRunner"}, ""},
		{"LOOPBACK in any case", map[string]string{"endpoint": ep, "environment_type": "loopback"}, nil, external{ep, "universal"}, ""},
		{"other flags of the bench pass", map[string]string{"endpoint": ep, "suites": "stream", "robust_jobserver_p": "8"}, nil, external{ep, "universal"}, ""},

		{"--runner without an endpoint", map[string]string{"runner": "flink"}, nil, external{}, "pass --endpoint=HOST:PORT"},
		{"--environment_type without an endpoint", map[string]string{"environment_type": "LOOPBACK"}, nil, external{}, "--environment_type"},
		{"an empty endpoint", map[string]string{"endpoint": " "}, nil, external{}, "--endpoint"},
		{"--async", map[string]string{"endpoint": ep, "async": "true"}, nil, external{}, "drop --async"},
		{"--async without an endpoint", map[string]string{"async": "true"}, nil, external{}, "drop --async"},
		{"--prism", map[string]string{"endpoint": ep, "prism": "embedded"}, nil, external{}, "drop --prism"},
		{"--robust_modes", map[string]string{"endpoint": ep, "robust_modes": "jobserver"}, nil, external{}, "drop --robust_modes"},
		{"--robust_p", map[string]string{"endpoint": ep, "robust_p": "64"}, nil, external{}, "--robust_jobserver_p"},
		{"--runner_cpuprofile", map[string]string{"endpoint": ep, "runner_cpuprofile": "/tmp/p"}, nil, external{}, "drop --runner_cpuprofile"},
		{"--environment_config", map[string]string{"endpoint": ep, "environment_config": "x"}, nil, external{}, "drop --environment_config"},
		{"DOCKER", map[string]string{"endpoint": ep, "environment_type": "DOCKER"}, nil, external{}, "--environment_type=LOOPBACK"},
		{"a runner that does not submit to an endpoint", map[string]string{"endpoint": ep, "runner": "dataflow"}, nil, external{}, "--runner=dataflow"},
		{"direct", map[string]string{"endpoint": ep, "runner": "direct"}, nil, external{}, "want universal"},
		{"the service suite", map[string]string{"endpoint": ep}, []string{"service (leave it out of --suites)"}, external{}, "leave it out of --suites"},
	} {
		got, err := chooseExternal(tt.set, tt.processSuites)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: error %v, want none", tt.name, err)
		case tt.wantErr != "" && err == nil:
			t.Errorf("%s: got %+v, want an error with %q", tt.name, got, tt.wantErr)
		case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
			t.Errorf("%s: error %q, want it to say %q", tt.name, err, tt.wantErr)
		case got != tt.want:
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestChildArgs(t *testing.T) {
	const exp = "x"
	onFlink := spec{Endpoint: "flink:8099", Runner: "flink"}
	for _, tt := range []struct {
		name string
		s    spec
		port int
		set  map[string]string
		want []string
	}{
		{"embedded prism: runner.Run chooses", spec{}, 0, nil, nil},
		{"embedded prism, with the launcher's flags", spec{}, 0,
			map[string]string{"experiments": "a", "checkpointing_interval": "5s", "suites": "stream", "p": "8"},
			[]string{"--experiments=a", "--checkpointing_interval=5s"}},
		{"the bench's job server", spec{JobServer: true}, 4321, nil,
			[]string{"--runner=universal", "--endpoint=localhost:4321", "--environment_type=LOOPBACK"}},
		{"an endpoint", onFlink, 0, nil,
			[]string{"--runner=flink", "--endpoint=flink:8099", "--environment_type=LOOPBACK"}},
		{"an endpoint, with the launcher's flags in name order and the bench's own left out", onFlink, 0,
			map[string]string{"runner": "flink", "endpoint": "flink:8099", "environment_type": "loopback", "experiments": "a," + exp + ",b",
				"parallelism": "2", "checkpointing_interval": "5s", "stream_rates": "0.4", "suites": "stream"},
			[]string{"--runner=flink", "--endpoint=flink:8099", "--environment_type=LOOPBACK", "--experiments=a," + exp + ",b",
				"--checkpointing_interval=5s", "--parallelism=2"}},
		{"a repeated flag goes once per value", spec{}, 0,
			map[string]string{"runner_option": "max_bundle_size=5\nflink_version=\"1.10\""},
			[]string{"--runner_option=max_bundle_size=5", `--runner_option=flink_version="1.10"`}},
	} {
		if got := childArgs(tt.s, tt.port, tt.set); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestEndpointRows: on a job server the bench did not start, a row names it
// and the runner's CPU and memory read "not measured", and its CPU targets
// are not judged.
func TestEndpointRows(t *testing.T) {
	s := spec{Suite: "stream", Contender: "async", Rate: 0.4, Keys: 100, P: 64, Latency: 20e6, C: 1e9, For: 5e9,
		Endpoint: "localhost:8099", Runner: "universal"}
	res := result{spec: s, WallS: 8, Sustained: 1280, P99Ms: 100, CPUWorkerSPer1k: 0.2}
	r := row{spec: s, Runs: []result{res}}
	if got := s.shape(); !strings.HasSuffix(got, " on universal at localhost:8099") {
		t.Errorf("shape %q does not name the runner and its endpoint", got)
	}
	cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(r.tableRow(), "| "), " |"), " | ")
	if len(cells) != len(unboundedCols) {
		t.Fatalf("%d cells, want %d: %q", len(cells), len(unboundedCols), cells)
	}
	cell := func(col string) string { return cells[slices.Index(unboundedCols, col)] }
	for _, col := range []string{"CPU s/1k runner", "CPU s/1k total", "peak RSS MB runner"} {
		if got := cell(col); got != notMeasured {
			t.Errorf("%s cell = %q, want %q", col, got, notMeasured)
		}
	}
	if got := cell("CPU s/1k worker"); got != "0.200" {
		t.Errorf("CPU s/1k worker cell = %q, want 0.200", got)
	}
	for _, tg := range checkTargets([]row{r}) {
		if strings.Contains(tg.name, "CPU") && tg.judged {
			t.Errorf("target %q judged (%s), want not judged", tg.name, tg.detail)
		}
	}
}

// TestRobustOnEndpoint: with an endpoint the robust suite runs once, on it,
// at the job server's parallelism.
func TestRobustOnEndpoint(t *testing.T) {
	ext := external{Endpoint: "localhost:8099", Runner: "universal"}
	specs, err := suites([]string{"robust"}, ext)
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := suites([]string{"robust"}, external{})
	if err != nil {
		t.Fatal(err)
	}
	modes := len(list(*robustModes))
	if len(specs)*modes != len(embedded) {
		t.Errorf("%d robust rows on an endpoint, want %d (the %d without, over %d modes)", len(specs), len(embedded)/modes, len(embedded), modes)
	}
	for _, s := range specs {
		if s.Endpoint != ext.Endpoint || s.Runner != ext.Runner || s.JobServer || s.P != *robustJobServerP {
			t.Errorf("robust row %s: endpoint %q runner %q job server %v P=%d; want %q %q false %d",
				s.shape(), s.Endpoint, s.Runner, s.JobServer, s.P, ext.Endpoint, ext.Runner, *robustJobServerP)
		}
	}
}

// TestNotes: a measured run's note (a job server that did not report the
// job's metrics) is said once for the runs that share it, beside the
// failures; a run's note that is the row's is not said twice.
func TestNotes(t *testing.T) {
	const metrics = "the job server did not report the job's metrics"
	for _, tt := range []struct {
		name string
		r    row
		want string
	}{
		{"measured runs with a note", row{Runs: []result{{Note: metrics}, {}, {Note: metrics}}},
			"(run 1, 3 of 3) " + metrics},
		{"a failure beside it", row{Runs: []result{{Note: metrics}, {Failed: true, Note: "lost 3"}}},
			"(run 1 of 2) " + metrics + "; FAILED (run 2 of 2): lost 3"},
		{"the row's note on every run", row{Note: pythonNote, Runs: []result{{Note: pythonNote}, {Note: pythonNote}}},
			pythonNote},
	} {
		if got := tt.r.notes(); got != tt.want {
			t.Errorf("%s: notes %q, want %q", tt.name, got, tt.want)
		}
	}
}

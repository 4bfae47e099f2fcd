package integration

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// pythonJobService returns the endpoint of Beam Python's portable job
// service (integration/pybeam.sh start), a runner that is not prism: its
// FnApiRunner keeps state and timers by its own rules.
func pythonJobService(t *testing.T) string {
	t.Helper()
	if e := os.Getenv("ASYNCBEAM_PYTHON_JOB_SERVICE"); e != "" {
		return e
	}
	if os.Getenv("CI") != "" {
		t.Fatal("ASYNCBEAM_PYTHON_JOB_SERVICE is not set: .ci/run must start the job service (integration/pybeam.sh start)")
	}
	t.Skip(`needs Beam Python's job service: eval "$(integration/pybeam.sh start)"`)
	return ""
}

// TestEnrichOnPythonJobService submits the main job (bounded input) to the
// Python job service with the worker in this process (LOOPBACK): the
// stateless path, and with --ordered the keyed path with bag state, every
// record in exactly one of the two outputs.
func TestEnrichOnPythonJobService(t *testing.T) {
	endpoint := pythonJobService(t)
	enrich := build(t, "./pipelines/enrich")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"defaults", nil, `records: in=3000 out=3000 failed=0 wall=`},
		{"ordered, failing calls", []string{"--ordered", "--error_rate=0.2", "--latency=5ms"}, `records: in=3000 out=\d+ failed=\d+ wall=`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := runEnrich(t, enrich, append([]string{"--runner=universal", "--endpoint=" + endpoint, "--environment_type=LOOPBACK"}, tt.args...)...)
			checkSummary(t, out)
			if !regexp.MustCompile(tt.want).Match(out) {
				t.Errorf("summary does not match %q:\n%s", tt.want, tail(out, 2000))
			}
		})
	}
}

// TestUnboundedOnPythonJobService runs the transform on an unbounded source
// (a periodic impulse: the stream path, bag state and processing-time
// timers) on the Python job service, and on embedded prism beside it, and
// counts the outputs in a DoFn after the transform: each element's output
// exactly once, with calls shorter and longer than the source's ticks and
// over more keys than elements per tick.
//
// passert cannot judge this on that runner: it repeats the entries of an
// unbounded PCollection, a plain ParDo's as well (integration/testdata/
// unboundedjob's doc), so the job counts for itself.
func TestUnboundedOnPythonJobService(t *testing.T) {
	endpoint := pythonJobService(t)
	job := build(t, "./integration/testdata/unboundedjob")
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"embedded prism, for reference", []string{"--call=400ms"}},
		{"short calls", []string{"--runner=universal", "--endpoint=" + endpoint, "--environment_type=LOOPBACK"}},
		{"calls longer than a tick, C = 2 s", []string{"--runner=universal", "--endpoint=" + endpoint, "--environment_type=LOOPBACK", "--call=400ms", "--callback_frequency=2s"}},
		{"1,000 keys", []string{"--runner=universal", "--endpoint=" + endpoint, "--environment_type=LOOPBACK", "--ticks=30", "--per_tick=40", "--keys=1000", "--call=20ms"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, job, tt.args...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("unboundedjob %v: %v\n%s", tt.args, err, tail(out, 4000))
			}
			m := regexp.MustCompile(`outputs: want=(\d+) distinct=(\d+) total=(\d+)`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("no outputs line in:\n%s", tail(out, 4000))
			}
			if want, distinct, total := string(m[1]), string(m[2]), string(m[3]); distinct != want || total != want {
				t.Errorf("outputs: %s distinct and %s in all; want each of %s once", distinct, total, want)
			}
		})
	}
}

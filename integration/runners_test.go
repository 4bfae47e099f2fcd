package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPrism starts prism as a separate job server process, built from the
// pinned Beam module, and returns its job endpoint. It is stopped when the
// test ends.
func startPrism(t *testing.T) string {
	t.Helper()
	bin := build(t, "github.com/apache/beam/sdks/v2/go/cmd/prism")
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-job_port", fmt.Sprint(port), "-web_port", fmt.Sprint(freePort(t)), "-idle_shutdown_timeout", "10m")
	// prism starts PROCESS workers (Beam's boot loader) in its own working
	// directory, where the loader writes files: keep them out of the repo.
	cmd.Dir = t.TempDir()
	logPath := filepath.Join(t.TempDir(), "prism.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// PROCESS workers are prism's children; in a process group of their own
	// with prism, they end with it instead of outliving the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prism: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("prism log:\n%s", tail(b, 4000))
			}
		}
	})
	endpoint := fmt.Sprintf("localhost:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", endpoint, time.Second)
		if err == nil {
			c.Close()
			return endpoint
		}
		if time.Now().After(deadline) {
			t.Fatalf("prism job server did not listen on %s within 60 s", endpoint)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// bootWrapper writes a script that starts Beam's Go boot loader, which fetches
// the staged worker binary from the job server and runs it. prism v2.77.0
// passes the worker ID as --id='ID', quotes included in the value (it starts
// the command without a shell), so the script strips them.
func bootWrapper(t *testing.T) string {
	t.Helper()
	boot := build(t, "github.com/apache/beam/sdks/v2/go/container")
	script := filepath.Join(t.TempDir(), "boot.sh")
	body := "#!/bin/sh\n" +
		`id=$(printf '%s' "$1" | sed "s/^--id='\(.*\)'\$/--id=\1/")` + "\n" +
		"shift\n" +
		"exec " + boot + ` "$id" "$@"` + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

func runEnrich(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--output", t.TempDir()}, args...)...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("enrich %v: %v\n%s", args, err, tail(out, 4000))
	}
	return out
}

// TestEnrichOnPrismJobServer submits the main job to prism running as its own
// process, first with the SDK worker in the submitting process (LOOPBACK),
// then with the worker as a separate process that prism starts (PROCESS):
// the second proves that the transform's registrations work in a worker that
// only ran init() and beam.Init().
func TestEnrichOnPrismJobServer(t *testing.T) {
	enrich := build(t, "./pipelines/enrich")
	endpoint := startPrism(t)
	t.Run("LOOPBACK", func(t *testing.T) {
		out := runEnrich(t, enrich, "--runner=universal", "--endpoint="+endpoint, "--environment_type=LOOPBACK")
		checkSummary(t, out)
	})
	t.Run("PROCESS", func(t *testing.T) {
		events := filepath.Join(t.TempDir(), "events.jsonl")
		out := runEnrich(t, enrich, "--runner=universal", "--endpoint="+endpoint, "--environment_type=PROCESS",
			`--environment_config={"command":"`+bootWrapper(t)+`"}`, "--worker_binary="+enrich, "--error_rate=0.1",
			"--ordered", "--priority_field=items", "--events="+events)
		checkSummary(t, out)
		// The listener, the priority function and the order were rebuilt in
		// the worker process from what the job carried.
		if line := summaryLine(t, out, "events: "); !strings.Contains(line, " accepted=3000 ") {
			t.Errorf("events summary %q: want every record accepted, in the worker's event file", line)
		}
		summaryLine(t, out, "order: each of 240 keys committed its records in input order")
	})
}

// summaryLine returns the line of out that starts with prefix.
func summaryLine(t *testing.T, out []byte, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	t.Fatalf("output lacks a line starting with %q:\n%s", prefix, out)
	return ""
}

// TestEnrichDataflowDryRun translates the main job for Dataflow without
// submitting it (no network). The input is bounded and in the global window,
// so the transform is the stateless bundle DoFn: no state, hence no shuffle
// before it. With --ordered it is the keyed variant, whose bag makes Dataflow
// group each key's records.
func TestEnrichDataflowDryRun(t *testing.T) {
	enrich := build(t, "./pipelines/enrich")
	flags := []string{"--runner=dataflow", "--dry_run", "--project=demo-project", "--region=us-central1",
		"--staging_location=gs://demo-bucket/staging", "--temp_location=gs://demo-bucket/temp", "--worker_binary=" + enrich}
	for _, tc := range []struct {
		name      string
		extra     []string
		want      []string
		wantNever []string
	}{
		{"unordered", nil, []string{"async.bundleFn"}, []string{"beam:user_state:", "async.keyedBundleFn"}},
		{"ordered", []string{"--ordered"}, []string{"async.keyedBundleFn", "asyncGroup", "beam:user_state:bag:v1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := string(runEnrich(t, enrich, append(append([]string{}, flags...), tc.extra...)...))
			for _, want := range append([]string{"Dry-run: not submitting job", "dry run: the runner printed the job"}, tc.want...) {
				if !strings.Contains(out, want) {
					t.Errorf("dry-run output lacks %q", want)
				}
			}
			for _, never := range tc.wantNever {
				if strings.Contains(out, never) {
					t.Errorf("dry-run output has %q; want the stateless bundle DoFn", never)
				}
			}
		})
	}
}

// TestRunnerFlagsAreChecked: Dataflow and job servers name the missing flag
// before any work.
func TestRunnerFlagsAreChecked(t *testing.T) {
	enrich := build(t, "./pipelines/enrich")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--runner=dataflow", "--project=p"}, "needs --region"},
		{[]string{"--runner=universal"}, "needs --endpoint"},
	} {
		cmd := exec.Command(enrich, tc.args...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "panic") {
			t.Errorf("enrich %v: err %v, output %q; want a failure saying %q", tc.args, err, tail(out, 500), tc.want)
		}
	}
}

// TestEnrichWithDirectRunner: --runner=direct, the habit of Beam users for a
// local run, runs the main job on embedded prism (the legacy Go direct
// runner has no state and timers), says so in one line, and accounts for
// every record.
func TestEnrichWithDirectRunner(t *testing.T) {
	enrich := build(t, "./pipelines/enrich")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, enrich, "--runner=direct", "--output", t.TempDir(), "--latency=2ms").CombinedOutput()
	if err != nil {
		t.Fatalf("enrich --runner=direct: %v\n%s", err, tail(out, 2000))
	}
	for _, want := range []string{"running on prism", "records: in=3000 out=3000 failed=0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("enrich --runner=direct output lacks %q:\n%s", want, tail(out, 2000))
		}
	}
	if n := strings.Count(string(out), "legacy Go direct runner"); n != 1 {
		t.Errorf("the reason is given %d times, want once", n)
	}
}

// TestBenchSmoke runs the benchmark program on a tiny workload: every
// contender of the batch and stream suites must produce a row with all its
// elements (the bench checks each element came out once per window), the
// targets are judged, and one run on a prism job server splits CPU between
// the worker and the runner process.
func TestBenchSmoke(t *testing.T) {
	bench := build(t, "./pipelines/bench")
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bench, "--suites=batch,stream", "--batch_n=200", "--batch_keys=10,n", "--batch_contenders=passthrough,timeronly,bundle,eager,async", "--batch_sync=false",
		"--latency=5ms", "--p=16", "--stream_for=2s", "--lead=500ms", "--stream_rates=0.5", "--stream_keys=10", "--stream_contenders=passthrough,timeronly,bundle,eager,async",
		"--repeat=1", "--json", jsonPath, "--allow_dirty")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, tail(out, 4000))
	}
	for _, row := range []string{"| N=200 keys=10 | passthrough |", "| N=200 keys=200 (one per element) | timeronly |", "| N=200 keys=10 | bundle |", "| N=200 keys=10 | eager |",
		"| N=200 keys=200 (one per element) | async |", "| 0.5×P/L keys=10 for=2s | passthrough |", "| 0.5×P/L keys=10 for=2s | async |", "targets met"} {
		if !strings.Contains(string(out), row) {
			t.Errorf("bench output lacks the row %q:\n%s", row, tail(out, 2000))
		}
	}
	if b, err := os.ReadFile(jsonPath); err != nil || !strings.Contains(string(b), `"ratio_to_limit"`) {
		t.Errorf("bench JSON missing or without results: %v", err)
	}
	// On a job server of its own, the runner's CPU and memory are its process's.
	cmd = exec.CommandContext(ctx, bench, "--suites=stream", "--prism=jobserver", "--latency=5ms", "--p=16", "--stream_for=2s", "--lead=1s",
		"--stream_rates=0.5", "--stream_keys=10", "--stream_contenders=async", "--repeat=1", "--json", jsonPath, "--allow_dirty")
	if out, err = cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench --prism=jobserver: %v\n%s", err, tail(out, 4000))
	}
	var doc struct {
		Rows []struct {
			Runs []struct {
				Runner float64 `json:"cpu_runner_s_per_1k"`
				RSS    float64 `json:"peak_rss_runner_mb"`
			} `json:"runs"`
		} `json:"rows"`
	}
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &doc) != nil || len(doc.Rows) != 1 || len(doc.Rows[0].Runs) != 1 ||
		doc.Rows[0].Runs[0].Runner <= 0 || doc.Rows[0].Runs[0].RSS <= 0 {
		t.Errorf("bench --prism=jobserver JSON = %+v (%v); want one run with the runner's CPU and RSS", doc, err)
	}
}

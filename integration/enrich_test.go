package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// repoRoot is the module root, two levels above this file.
func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Dir(filepath.Dir(file))
}

// build compiles a main package (of this module or a dependency) into the
// test's temporary directory.
func build(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// TestEnrichOnEmbeddedPrism builds the main job, runs it as its own process
// on embedded prism against its loopback service, and checks its summary:
// every input record appears exactly once in the output.
func TestEnrichOnEmbeddedPrism(t *testing.T) {
	bin := build(t, "./pipelines/enrich")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"defaults", nil, `records: in=3000 out=3000 failed=0 wall=`},
		{"failing service calls are accounted for", []string{"--error_rate=0.2", "--latency=5ms"}, `records: in=3000 out=\d+ failed=\d+ wall=`},
		{"generated records over many customers, with bad lines", []string{"--generate=2000", "--customers=1500", "--bad_lines=4", "--latency=5ms"},
			`records: in=2000 out=1996 failed=4 wall=.* failures: bad_input=4`},
		{"batches to the batch endpoint, some failing whole", []string{"--batch_size=50", "--concurrency=4", "--error_rate=0.2", "--latency=5ms"},
			`records: in=3000 out=\d+ failed=\d+ wall=.* requests=\d+ per_request=`},
		{"customer profiles looked up in batches, cached (async.BatchEnrich)", []string{"--cache=100000,10m", "--batch_size=20", "--latency=5ms"},
			`records: in=3000 out=3000 failed=0 wall=.* hit_rate=0\.9\d* requests=\d+ per_request=`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			outDir := t.TempDir()
			cmd := exec.CommandContext(ctx, bin, append([]string{"--output", outDir}, tc.args...)...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("enrich %v: %v\n%s", tc.args, err, out)
			}
			if !regexp.MustCompile(tc.want).Match(out) {
				t.Errorf("enrich %v output has no line matching %q:\n%s", tc.args, tc.want, out)
			}
			checkSummary(t, out)
			if _, err := os.Stat(filepath.Join(outDir, "enriched.jsonl")); err != nil {
				t.Errorf("no output file: %v", err)
			}
		})
	}
}

// TestEnrichRefusesAsync: --async is refused before any work, with what to
// change: by runner.Check where the program runs the job's worker or runner
// (embedded prism, LOOPBACK), and by the job itself elsewhere, since it
// waits for its run to summarise the outputs.
func TestEnrichRefusesAsync(t *testing.T) {
	bin := build(t, "./pipelines/enrich")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--async"}, "runner: --async returns once the job is submitted"},
		{[]string{"--async", "--runner=universal", "--endpoint=localhost:1", "--environment_type=LOOPBACK"}, "runner: --async returns once the job is submitted"},
		{[]string{"--async", "--runner=universal", "--endpoint=localhost:1", "--environment_type=PROCESS"}, "this job waits for its run to summarise the outputs"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		outDir := t.TempDir()
		out, err := exec.CommandContext(ctx, bin, append([]string{"--output", outDir}, tc.args...)...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("enrich %v: error %v; want it refused with %q:\n%s", tc.args, err, tc.want, tail(out, 2000))
		}
		if left, _ := os.ReadDir(outDir); len(left) > 0 {
			t.Errorf("enrich %v wrote %d files to --output before refusing; want none", tc.args, len(left))
		}
	}
}

// TestEnrichBadLines: a line that is not JSON and a record without the key
// field go to failures.jsonl with their line numbers and raw text, and the
// job finishes with every line accounted for.
func TestEnrichBadLines(t *testing.T) {
	bin := build(t, "./pipelines/enrich")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	lines := "{\"id\":\"a1\",\"customer_id\":\"c1\"}\n{\"id\":\"a2\",\n\n{\"id\":\"a3\"}\n{\"id\":\"a4\",\"customer_id\":\"c2\"}\n"
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--input", in, "--output", dir, "--latency=1ms").CombinedOutput()
	if err != nil {
		t.Fatalf("enrich: %v\n%s", err, out)
	}
	if want := regexp.MustCompile(`records: in=4 out=2 failed=2 .* failures: bad_input=2`); !want.Match(out) {
		t.Errorf("summary does not count the two bad lines:\n%s", out)
	}
	failures, err := os.ReadFile(filepath.Join(dir, "failures.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"line":2`, `"raw":"{\"id\":\"a2\","`, `"line":4`, `no field \"customer_id\"`, `"kind":"bad_input"`} {
		if !strings.Contains(string(failures), want) {
			t.Errorf("failures.jsonl lacks %s:\n%s", want, failures)
		}
	}
}

// checkSummary checks the job's summary line: out + failed = in. (The job
// itself exits non-zero if a record is missing or duplicated.)
func checkSummary(t *testing.T, out []byte) {
	t.Helper()
	m := regexp.MustCompile(`records: in=(\d+) out=(\d+) failed=(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line in:\n%s", out)
	}
	in, _ := strconv.Atoi(string(m[1]))
	ok, _ := strconv.Atoi(string(m[2]))
	failed, _ := strconv.Atoi(string(m[3]))
	if in == 0 || ok+failed != in {
		t.Errorf("out + failed = %d + %d, want in = %d", ok, failed, in)
	}
}

// TestEnrichCacheByCustomer runs the job's lookup form on records of which
// nine in ten repeat a customer, without and with --cache: the cached run
// makes one call per customer (at most 10% more) and writes the same
// enriched records; with failing calls every record is still in exactly one
// of the two files.
func TestEnrichCacheByCustomer(t *testing.T) {
	bin := build(t, "./pipelines/enrich")
	common := []string{"--generate=3000", "--customers=300", "--latency=5ms", "--concurrency=8"}
	run := func(args ...string) (summary string, enriched []string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		dir := t.TempDir()
		out, err := exec.CommandContext(ctx, bin, append(append([]string{"--output", dir}, common...), args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("enrich %v: %v\n%s", args, err, out)
		}
		checkSummary(t, out)
		body, err := os.ReadFile(filepath.Join(dir, "enriched.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		slices.Sort(lines)
		return string(regexp.MustCompile(`records: .*`).Find(out)), lines
	}
	callsOf := func(summary string) int {
		m := regexp.MustCompile(`calls=(\d+)`).FindStringSubmatch(summary)
		if m == nil {
			t.Fatalf("no calls in %q", summary)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	plain, want := run("--lookup_by_customer")
	cached, got := run("--cache=100000,10m")
	if n := callsOf(plain); n != 3000 {
		t.Errorf("uncached: %d calls; want one per record, 3000 (%s)", n, plain)
	}
	if n := callsOf(cached); n < 300 || n > 330 {
		t.Errorf("cached: %d calls; want one per customer, 300 (at most 10%% more) (%s)", n, cached)
	}
	if !regexp.MustCompile(`hit_rate=0\.(89|9)`).MatchString(cached) {
		t.Errorf("cached summary %q; want a hit rate of about 0.9", cached)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the cached run wrote %d enriched records, the uncached %d, or they differ", len(got), len(want))
	}
	failing, _ := run("--cache=100000,10m", "--error_rate=0.6", "--max_attempts=1")
	if !regexp.MustCompile(`failed=[1-9]\d* .*failures: error=`).MatchString(failing) {
		t.Errorf("with failing calls: %q; want some records failed (and every record accounted for)", failing)
	}
}

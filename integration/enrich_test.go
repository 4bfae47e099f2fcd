package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
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

// TestEnrichOnEmbeddedPrism builds the main job, runs it as its own process
// on embedded prism against its loopback service, and checks its summary:
// every input record appears exactly once in the output.
func TestEnrichOnEmbeddedPrism(t *testing.T) {
	root := repoRoot(t)
	bin := filepath.Join(t.TempDir(), "enrich")
	build := exec.Command("go", "build", "-o", bin, "./pipelines/enrich")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the enrich job: %v\n%s", err, out)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"defaults", nil, `records: in=3000 out=3000 failed=0 wall=`},
		{"failing service calls are accounted for", []string{"--error_rate=0.2", "--latency=5ms"}, `records: in=3000 out=\d+ failed=\d+ wall=`},
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
			if m := regexp.MustCompile(`records: in=(\d+) out=(\d+) failed=(\d+)`).FindSubmatch(out); m != nil {
				in, _ := strconv.Atoi(string(m[1]))
				ok, _ := strconv.Atoi(string(m[2]))
				failed, _ := strconv.Atoi(string(m[3]))
				if ok+failed != in {
					t.Errorf("out + failed = %d + %d, want in = %d", ok, failed, in)
				}
			}
			if _, err := os.Stat(filepath.Join(outDir, "enriched.jsonl")); err != nil {
				t.Errorf("no output file: %v", err)
			}
		})
	}
}

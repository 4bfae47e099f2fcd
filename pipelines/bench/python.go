package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// pythonBin finds the interpreter of the virtual environment that
// pipelines/bench/python/setup.sh makes, or $BENCH_PYTHON.
func pythonBin() (string, error) {
	if p := os.Getenv("BENCH_PYTHON"); p != "" {
		return p, nil
	}
	p := filepath.Join("pipelines", "bench", "python", ".venv", "bin", "python")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("Beam Python is not installed: run pipelines/bench/python/setup.sh (pip install apache-beam==2.77.0 into a virtual environment) from the repository root")
	}
	return p, nil
}

// runPython runs the Beam Python AsyncWrapper contender on its own prism
// binary, built from the same Go module, and returns its result.
func runPython(sp spec) (result, error) {
	py, err := pythonBin()
	if err != nil {
		return result{}, err
	}
	dir, err := os.MkdirTemp("", "bench-python-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	prism, err := buildPrism(dir)
	if err != nil {
		return result{}, fmt.Errorf("building prism for Beam Python: %w", err)
	}
	scenario := "stream"
	if sp.Bounded {
		scenario = "batch"
	}
	args := []string{filepath.Join("pipelines", "bench", "python", "asyncwrapper_bench.py"),
		"--scenario=" + scenario, fmt.Sprint("--n=", sp.N), fmt.Sprint("--keys=", sp.Keys),
		fmt.Sprint("--latency_ms=", float64(sp.Latency.Microseconds())/1000), fmt.Sprint("--p=", sp.P), fmt.Sprint("--c_s=", sp.C.Seconds()),
		fmt.Sprint("--slow_every=", sp.SlowEvery), fmt.Sprint("--slow_x=", sp.SlowX),
		"--prism=" + prism, "--samples=" + filepath.Join(dir, "samples.txt")}
	if !sp.Bounded {
		args = append(args, fmt.Sprint("--per_tick=", sp.perTick()), fmt.Sprint("--tick_s=", tick.Seconds()), fmt.Sprint("--stream_s=", sp.For.Seconds()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *pythonTimeout)
	defer cancel()
	var out, logs bytes.Buffer
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Stdout, cmd.Stderr = &out, &logs
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("python contender: %v: %s", err, tailString(logs.String(), 2000))
	}
	var r struct {
		WallS     float64 `json:"wall_s"`
		CPUS      float64 `json:"cpu_s"`
		PeakRSSMB float64 `json:"peak_rss_mb"`
	}
	if err := json.Unmarshal(lastJSONLine(out.Bytes()), &r); err != nil {
		return result{}, fmt.Errorf("python contender: reading its result: %v", err)
	}
	samples, err := readSamples(filepath.Join(dir, "samples.txt"))
	if err != nil {
		return result{}, fmt.Errorf("python contender: %v", err)
	}
	if len(samples) != sp.elements() {
		return result{}, fmt.Errorf("python contender: %d outputs for %d elements", len(samples), sp.elements())
	}
	res := measure(sp, samples, time.Duration(r.WallS*float64(time.Second)), time.Duration(r.CPUS*float64(time.Second)), r.PeakRSSMB)
	res.Note = "CPU and RSS of the Python driver process only"
	return res, nil
}

// buildPrism builds the prism command from the Go module into dir.
func buildPrism(dir string) (string, error) {
	bin := filepath.Join(dir, "prism")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/apache/beam/sdks/v2/go/cmd/prism").CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	return bin, nil
}

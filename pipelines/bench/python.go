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
// binary, built from the same Go module, and returns its row.
func runPython(sc string) (result, error) {
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
	elems := *n
	args := []string{filepath.Join("pipelines", "bench", "python", "asyncwrapper_bench.py"),
		"--scenario=" + sc, fmt.Sprint("--n=", *n), fmt.Sprint("--keys=", *keys),
		fmt.Sprint("--latency_ms=", float64(latency.Microseconds())/1000), fmt.Sprint("--p=", *par), fmt.Sprint("--c_s=", freq.Seconds()),
		"--prism=" + prism, "--samples=" + filepath.Join(dir, "samples.txt")}
	if sc == "stream" {
		elems = streamElements()
		args = append(args, fmt.Sprint("--per_tick=", streamPerTick()), fmt.Sprint("--tick_s=", tickEvery.Seconds()), fmt.Sprint("--stream_s=", streamFor.Seconds()))
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
	if len(samples) != elems {
		return result{}, fmt.Errorf("python contender: %d outputs for %d elements", len(samples), elems)
	}
	fig := figures(samples, settle())
	wallForRate := r.WallS
	if sc == "stream" {
		wallForRate = max(r.WallS, streamFor.Seconds())
	}
	limit := (time.Duration(elems) * *latency / time.Duration(*par)).Seconds()
	return result{Scenario: sc, Contender: "python", Elements: elems, WallS: r.WallS, Throughput: float64(elems) / wallForRate,
		RatioToLimit: limit / r.WallS, P50Ms: fig.p50Ms, P99Ms: fig.p99Ms, Sustained: fig.sustained, CPUSPer1k: r.CPUS / float64(elems) * 1000, PeakRSSMB: r.PeakRSSMB,
		Note: "CPU and RSS of the Python driver process only"}, nil
}

func lastJSONLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.HasPrefix(lines[i], []byte("{")) {
			return lines[i]
		}
	}
	return nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

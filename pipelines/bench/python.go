package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/asyncbeam/asyncbeam/runner/nosplit"
)

// pythonNote is said on every python row. Beam Python's AsyncWrapper sets
// its key's timer, on every element, to the next multiple of C plus a fixed
// per-key offset o_k in [0, C) (next_time_to_fire: random.seed(key), then
// random.random() × C). An element that arrives before that fire time
// pushes the timer to the next round, so a key whose elements come every
// d ≤ o_k seconds never fires while the source runs. At R = 2,560/s
// (0.8 × P/L), d = K/R is 0.039 s at 100 keys (about 96% of keys never
// fire), 0.39 s at 1,000 (about 61%) and 3.9 s at 10,000 (every key fires).
// Its default callback_frequency is 5 s; the bench passes C.
const pythonNote = "AsyncWrapper re-arms a key's timer on every element (next round of C + a fixed per-key offset o_k): a key whose elements come every d ≤ o_k never fires while the source runs"

// pythonBin finds the interpreter of the virtual environment that
// pipelines/bench/python/setup.sh makes, or $BENCH_PYTHON.
func pythonBin() (string, error) {
	if p := os.Getenv("BENCH_PYTHON"); p != "" {
		return p, nil
	}
	p := filepath.Join("pipelines", "bench", "python", ".venv", "bin", "python")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("Beam Python is not installed: run pipelines/bench/python/setup.sh (pip install apache-beam==2.78.0 into a virtual environment) from the repository root")
	}
	return p, nil
}

// pythonWorker runs the Beam Python AsyncWrapper contender against the job
// server at endpoint, with the same source, lead time and experiment as the
// Go rows; its sink writes each output to a file the parent reads.
func pythonWorker(ctx context.Context, sp spec, endpoint string) (worker, error) {
	py, err := pythonBin()
	if err != nil {
		return worker{}, err
	}
	if endpoint == "" {
		return worker{}, fmt.Errorf("the python contender runs on a job server: its spec names none")
	}
	if sp.Bounded || sp.Idle > 0 || sp.window().Kind != "global" {
		return worker{}, fmt.Errorf("the python contender runs an unbounded source in the global window only")
	}
	dir, err := os.MkdirTemp("", "bench-python-")
	if err != nil {
		return worker{}, err
	}
	outsPath, firstPath := filepath.Join(dir, "outputs.txt"), filepath.Join(dir, "first.txt")
	args := []string{filepath.Join("pipelines", "bench", "python", "asyncwrapper_bench.py"),
		fmt.Sprint("--keys=", sp.Keys), fmt.Sprint("--latency_ms=", float64(sp.Latency.Microseconds())/1000),
		fmt.Sprint("--p=", sp.P), fmt.Sprint("--c_s=", sp.C.Seconds()),
		fmt.Sprint("--per_tick=", sp.perTick()), fmt.Sprint("--tick_s=", tick.Seconds()),
		fmt.Sprint("--stream_s=", sp.For.Seconds()), fmt.Sprint("--lead_s=", sp.Lead.Seconds()),
		fmt.Sprint("--slow_every=", sp.SlowEvery), "--slow_at=" + intsText(sp.SlowAt), fmt.Sprint("--slow_x=", sp.SlowX),
		"--outputs=" + outsPath, "--first=" + firstPath}
	// Beam's own options, which the script hands to PipelineOptions: the
	// job server and the SDK worker in the python process (LOOPBACK), and
	// prism's splits off, as the Go rows have them (runner/nosplit: a split
	// loses the state of AsyncWrapper's bags as it does the transform's).
	args = append(args, "--runner=PortableRunner", "--job_endpoint="+endpoint,
		"--environment_type=LOOPBACK", "--experiments="+nosplit.Experiment, "--streaming")
	figures := func(out []byte) (result, error) {
		var r struct {
			WallS       float64 `json:"wall_s"`
			SubmittedUs int64   `json:"submitted_us"`
		}
		if err := json.Unmarshal(lastJSONLine(out), &r); err != nil {
			return result{}, fmt.Errorf("python contender: reading its result: %v (output %q)", err, tailString(string(out), 500))
		}
		outs, err := readOutputs(outsPath)
		if err != nil {
			return result{}, fmt.Errorf("python contender: %v", err)
		}
		res := measure(sp, outs, time.Duration(r.WallS*float64(time.Second)))
		if b, err := os.ReadFile(firstPath); err == nil {
			if first, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				res.StartupS = float64(first-r.SubmittedUs) / 1e6
			}
		}
		res.Note = pythonNote
		if msg := checkOnce(sp, outs); msg != "" {
			res.Failed, res.Note = true, msg+"; "+pythonNote
		}
		return res, nil
	}
	return worker{cmd: exec.CommandContext(ctx, py, args...), figures: figures, cleanup: func() { os.RemoveAll(dir) }}, nil
}

func intsText(is []int) string {
	var out []string
	for _, i := range is {
		out = append(out, strconv.Itoa(i))
	}
	return strings.Join(out, ",")
}

// readOutputs reads the python sink's lines: "created_us committed_us index
// window_start_ms window_length_ms" (length -1 for the global window).
func readOutputs(path string) ([]output, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []output
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		var v [5]int64
		ok := len(fields) == 5
		for i := 0; ok && i < 5; i++ {
			var err error
			v[i], err = strconv.ParseInt(fields[i], 10, 64)
			ok = err == nil
		}
		if !ok {
			return nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		out = append(out, output{createdUs: v[0], latencyUs: int32(v[1] - v[0]), index: int32(v[2]), winStart: v[3], winLenMs: int32(v[4])})
	}
	return out, sc.Err()
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// runOnce runs a spec once, in a worker process of its own: on embedded
// prism, on a job server of its own or on the one at the spec's endpoint.
// A run that does not complete comes back Failed, with why.
func runOnce(s spec) result {
	res, err := measureRun(s)
	if err != nil {
		return result{spec: s, Failed: true, Note: "failed: " + err.Error()}
	}
	return res
}

// worker is the process a run submits its pipeline from, and in which the
// SDK worker runs (LOOPBACK): the Go child, or Beam Python.
type worker struct {
	cmd *exec.Cmd
	// figures reads the run's figures once the process has ended, from its
	// standard output.
	figures func(stdout []byte) (result, error)
	cleanup func()
}

// measureRun runs the worker, on a job server of its own when the spec asks
// for one, while sampling CPU time, and adds what the worker and the runner
// used to the worker's figures. On embedded prism the two are one process:
// the child splits its CPU time by a profile (cpusplit.go), and its peak RSS
// is theirs together. On a job server the bench did not start, the
// runner's figures and the sums are not measured: they read zero.
func measureRun(s spec) (result, error) {
	var js *jobServer
	if s.JobServer {
		var err error
		if js, err = startJobServer(); err != nil {
			return result{}, err
		}
		defer js.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), *runTimeout)
	defer cancel()
	w, err := newWorker(ctx, s, js)
	if err != nil {
		return result{}, err
	}
	defer w.cleanup()
	var stdout bytes.Buffer
	logs := newTailBuffer(4 << 10)
	w.cmd.Stdout, w.cmd.Stderr = &stdout, logs

	origin := time.Now()
	if err := w.cmd.Start(); err != nil {
		return result{}, err
	}
	runnerPid := -1
	if js != nil {
		runnerPid = js.pid()
	}
	smp := startSampler(w.cmd.Process.Pid, runnerPid, origin)
	waitErr := w.cmd.Wait()
	end := time.Since(origin)
	var runnerAtEnd time.Duration
	if js != nil {
		runnerAtEnd, _ = procCPU(js.pid()) // prism is still up: its CPU as the worker ended
	}
	series := smp.stop()
	var runner usage
	if js != nil {
		runner = js.stop()
	}
	worker := usageOf(w.cmd.ProcessState)
	series = append(series, point(end, worker.cpu, runnerAtEnd))
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return result{}, fmt.Errorf("timed out after %v (--run_timeout): %s", *runTimeout, logs)
	case waitErr != nil:
		return result{}, fmt.Errorf("%s: %v: %s", s.Contender, waitErr, logs)
	}
	res, err := w.figures(stdout.Bytes())
	if err != nil {
		return result{}, err
	}
	addUsage(&res, s, worker, runner, series, origin)
	return res, nil
}

// newWorker makes the spec's worker: Beam Python, submitting to the job
// server js or else to the spec's endpoint, or the Go child (goWorker).
func newWorker(ctx context.Context, s spec, js *jobServer) (worker, error) {
	if s.Contender == "python" {
		endpoint := s.Endpoint
		if js != nil {
			endpoint = fmt.Sprintf("localhost:%d", js.port)
		}
		return pythonWorker(ctx, s, endpoint)
	}
	return goWorker(ctx, s, js)
}

// addUsage adds to res, the worker's figures, what the worker and the
// runner used: CPU time per 1,000 outputs, peak RSS, the CPU time series
// (from origin), and with idle time the CPU spent while quiet. On embedded
// prism the two are one process (worker): the child's profile (RunnerShare)
// splits its CPU time.
func addUsage(res *result, s spec, worker, runner usage, series []cpuPoint, origin time.Time) {
	if s.embedded() { // one process: split its time by the child's profile
		runner.cpu = time.Duration(float64(worker.cpu) * res.RunnerShare)
		worker.cpu -= runner.cpu
	}
	per1k := 1000 / float64(max(1, s.outputs()))
	res.CPUWorkerSPer1k, res.CPURunnerSPer1k = worker.cpu.Seconds()*per1k, runner.cpu.Seconds()*per1k
	if s.runnerMeasured() {
		res.CPUSPer1k = res.CPUWorkerSPer1k + res.CPURunnerSPer1k
	}
	res.PeakRSSWorkerMB, res.PeakRSSRunnerMB = worker.rssMB, runner.rssMB
	res.PeakRSSMB = worker.rssMB
	res.CPUSeries, res.SeriesStartUs = series, origin.UnixMicro()
	if s.Idle > 0 {
		if wq, rq, d, ok := quietCPU(series, res.SeriesStartUs, res.LastOutputUs); ok {
			res.QuietCPUWorkerPerS, res.QuietCPURunnerPerS, res.QuietS = wq, rq, d
			if s.runnerMeasured() {
				res.QuietCPUPerS = wq + rq
			}
		}
	}
}

// goWorker runs the spec in a child process of this program, on the job
// server js, at the spec's endpoint, or on embedded prism (childArgs).
func goWorker(ctx context.Context, s spec, js *jobServer) (worker, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return worker{}, err
	}
	port := 0
	if js != nil {
		port = js.port
	}
	args := append([]string{"--child=" + string(b)}, childArgs(s, port, setFlags())...)
	if *cpuProfile != "" {
		args = append(args, "--cpuprofile="+*cpuProfile)
	}
	figures := func(out []byte) (result, error) {
		var r result
		if err := json.Unmarshal(lastJSONLine(out), &r); err != nil {
			return result{}, fmt.Errorf("reading the child's result: %w (output %q)", err, tailString(string(out), 500))
		}
		return r, nil
	}
	// A temporary directory of its own: Beam Go's universal runner leaves an
	// empty beamloopbackworker-* file in it on every LOOPBACK submission.
	tmp, err := os.MkdirTemp("", "bench-child-")
	if err != nil {
		return worker{}, err
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	return worker{cmd: cmd, figures: figures, cleanup: func() { os.RemoveAll(tmp) }}, nil
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

package main

import (
	"bytes"
	"context"
	"os"
	"runtime/pprof"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/runner"
	"github.com/asyncbeam/asyncbeam/state"
)

// runChild runs one spec's pipeline from this process, on embedded prism,
// or submitted to a job server, the parent's or the one at the spec's
// endpoint (--runner, --endpoint, --environment_type=LOOPBACK: the SDK
// worker runs in this process; see childArgs), and returns what the outputs
// show. The parent measures the CPU time and RSS of this process and of the
// job server it started; on embedded prism the child profiles the run, to
// split its CPU time (cpusplit.go).
func runChild(s spec) (result, error) {
	c := callerFor(s)
	if s.Call == "http" {
		url, stop, err := startService()
		if err != nil {
			return result{}, err
		}
		defer stop()
		c.URL = url
	}
	p, root := beam.NewPipelineWithRoot()
	outputs.all = make([]output, 0, s.outputs()) // sized once: not grown while memory is measured
	if err := buildPipeline(root, s, c); err != nil {
		return result{}, err
	}
	var prof bytes.Buffer
	res0, submitted, wall, err := profiledRun(s, p, &prof)
	if err != nil {
		return result{}, err
	}
	outputs.Lock()
	outs := append([]output(nil), outputs.all...)
	outputs.Unlock()

	res := measure(s, outs, wall)
	if s.embedded() {
		shares, err := splitProfile(prof.Bytes())
		if err != nil {
			return result{}, err
		}
		res.RunnerShare = shares.runnerShare()
	}
	if first := firstSourceUs.Load(); first > 0 {
		res.StartupS = float64(first-submitted.UnixMicro()) / 1e6
	}
	switch msg := checkOnce(s, outs); {
	case msg != "":
		res.Failed, res.Note = true, msg
	case runner.MetricsError(res0) != nil:
		res.Note = "every output came out exactly once, but the job's metrics are missing: " + runner.MetricsError(res0).Error()
	}
	for _, p := range state.Default.Pools() {
		res.PeakHeld = max(res.PeakHeld, p.PeakHeld())
	}
	return res, nil
}

// profiledRun runs p and returns the runner's result, when it was
// submitted and how long it ran. On embedded prism or with --cpuprofile it
// profiles the run's CPU time into prof; with --cpuprofile it writes the
// profile to that file once the run has succeeded.
func profiledRun(s spec, p *beam.Pipeline, prof *bytes.Buffer) (beam.PipelineResult, time.Time, time.Duration, error) {
	if s.embedded() || *cpuProfile != "" {
		if err := pprof.StartCPUProfile(prof); err != nil {
			return nil, time.Time{}, 0, err
		}
	}
	submitted := time.Now()
	res0, runErr := runner.Run(context.Background(), p)
	wall := time.Since(submitted)
	if s.embedded() || *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if runErr != nil {
		return nil, time.Time{}, 0, runErr
	}
	if *cpuProfile != "" {
		if err := os.WriteFile(*cpuProfile, prof.Bytes(), 0o644); err != nil {
			return nil, time.Time{}, 0, err
		}
	}
	return res0, submitted, wall, nil
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/runner"
	"github.com/asyncbeam/asyncbeam/state"
)

// runChild runs one spec's pipeline from this process, on embedded prism,
// or submitted to the job server the parent started (--runner=universal
// --endpoint=... --environment_type=LOOPBACK: the SDK worker runs in this
// process), and returns what the outputs show. The parent measures the CPU
// time and RSS of this process and of the job server; on embedded prism the
// child profiles the run, to split its CPU time (cpusplit.go).
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
	if !s.JobServer || *cpuProfile != "" {
		if err := pprof.StartCPUProfile(&prof); err != nil {
			return result{}, err
		}
	}
	submitted := time.Now()
	_, err := runner.Run(context.Background(), p)
	wall := time.Since(submitted)
	if !s.JobServer || *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return result{}, err
	}
	if *cpuProfile != "" {
		if err := os.WriteFile(*cpuProfile, prof.Bytes(), 0o644); err != nil {
			return result{}, err
		}
	}
	outputs.Lock()
	outs := append([]output(nil), outputs.all...)
	outputs.Unlock()

	res := measure(s, outs, wall)
	if !s.JobServer {
		shares, err := splitProfile(prof.Bytes())
		if err != nil {
			return result{}, err
		}
		res.RunnerShare = shares.runnerShare()
	}
	if first := firstSourceUs.Load(); first > 0 {
		res.StartupS = float64(first-submitted.UnixMicro()) / 1e6
	}
	if msg := checkOnce(s, outs); msg != "" {
		res.Failed, res.Note = true, msg
	}
	for _, p := range state.Default.Pools() {
		res.PeakHeld = max(res.PeakHeld, p.PeakHeld())
	}
	return res, nil
}

// childArgs are the flags that make the child submit to the job server on
// port: the universal runner with the SDK worker in the child (LOOPBACK),
// and prism's experiment passed on the command line, since runner.Run adds
// it for embedded prism only (see runner.PrismExperiment).
func childArgs(port int) []string {
	return []string{"--runner=universal", fmt.Sprintf("--endpoint=localhost:%d", port),
		"--environment_type=LOOPBACK", "--experiments=" + runner.PrismExperiment}
}

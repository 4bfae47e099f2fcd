package main

// Embedded prism runs the runner and the SDK worker in one process, so the
// kernel's account of its CPU time is their sum. The child splits it with
// a CPU profile of the run: a sample whose stack passes through prism's
// packages, or through gRPC's server side (prism serves the Fn API the
// worker connects to), is the runner's; any other sample with code outside
// the Go runtime is the worker's (the SDK harness, gRPC's client side, the
// contender, the user's fn); a sample of the runtime alone (the garbage
// collector's workers, the scheduler) is shared, and split in proportion to
// the other two. The profile samples at 100 Hz: about a thousand samples a
// run of ten CPU seconds, which fixes each share to a few per cent.

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
)

// cpuShares is how a CPU profile divides a process's time.
type cpuShares struct{ runner, worker, shared int64 }

// runnerShare is the runner's share of the profiled time, with the shared
// part split in proportion.
func (c cpuShares) runnerShare() float64 {
	if c.runner+c.worker == 0 {
		return 0
	}
	return float64(c.runner) / float64(c.runner+c.worker)
}

// splitProfile reads a CPU profile (pprof's format) and sums its CPU time by
// side.
func splitProfile(data []byte) (cpuShares, error) {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return cpuShares{}, fmt.Errorf("reading the CPU profile: %w", err)
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			cpu = i
		}
	}
	if cpu < 0 {
		return cpuShares{}, fmt.Errorf("the profile has no cpu samples")
	}
	var c cpuShares
	for _, s := range p.Sample {
		switch sideOf(s) {
		case "runner":
			c.runner += s.Value[cpu]
		case "worker":
			c.worker += s.Value[cpu]
		default:
			c.shared += s.Value[cpu]
		}
	}
	return c, nil
}

// sideOf names the side a sample's stack belongs to (see the file's comment).
func sideOf(s *profile.Sample) string {
	app := false
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			name := line.Function.Name
			switch {
			case strings.Contains(name, "/runners/prism/"), strings.Contains(name, "http2Server"),
				strings.Contains(name, "NewServerTransport"), strings.Contains(name, "google.golang.org/grpc.(*Server)"):
				return "runner"
			case !runtimeOnly(name):
				app = true
			}
		}
	}
	if app {
		return "worker"
	}
	return "shared"
}

// runtimeOnly reports whether a function belongs to the Go runtime and its
// internals, not to code that asked it for the work.
func runtimeOnly(name string) bool {
	for _, p := range []string{"runtime.", "internal/", "syscall.", "gcWriteBarrier", "aeshash", "memeqbody"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

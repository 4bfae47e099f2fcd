package main

// With --runner_cpuprofile the job server is not prism's command but this
// program in a mode of its own (--serve_jobserver): prism's job server
// (prism.CreateJobServer, what the command runs, logging at warn as the
// bench runs the command) in a process that profiles its own CPU time
// until it is stopped. The profile shows where the runner's share of a
// job-server run goes, beside the worker's (--cpuprofile). A profiled
// run's runner figures are not those of the command's: they include the
// sampling and the writing of the profile, and the process has no web UI.

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
)

// serveJobServer runs prism's job server on port and profiles this
// process's CPU into path until SIGTERM (jobServer.stop's signal) or
// SIGINT, then writes the profile and returns.
func serveJobServer(port int, path string) error {
	beamlog.SetupLogging("warn", "dev")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if _, err := prism.CreateJobServer(ctx, prism.Options{Port: port}); err != nil {
		pprof.StopCPUProfile()
		f.Close()
		return fmt.Errorf("starting prism's job server: %w", err)
	}
	<-ctx.Done()
	pprof.StopCPUProfile()
	return f.Close()
}

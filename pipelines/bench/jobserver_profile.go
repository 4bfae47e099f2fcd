package main

// With --runner_cpuprofile the job server is not prism's command but this
// program in a mode of its own (--serve_jobserver): prism's job server
// (prism.CreateJobServer, what the command runs) in a process that profiles
// its own CPU time until it is stopped. It differs from the command only in
// having no web UI. The profile shows where the runner's share of a
// job-server run goes, beside the worker's (--cpuprofile).

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
)

// serveJobServer runs prism's job server on port and profiles this
// process's CPU into path until SIGTERM (jobServer.stop's signal), then
// writes the profile and returns.
func serveJobServer(port int, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if _, err := prism.CreateJobServer(ctx, prism.Options{Port: port}); err != nil {
		pprof.StopCPUProfile()
		return fmt.Errorf("starting prism's job server: %w", err)
	}
	<-ctx.Done()
	pprof.StopCPUProfile()
	return f.Close()
}

// Package runner launches the project's pipelines on a Beam runner chosen by
// the standard --runner flag, with embedded prism as the default.
//
// It exists so that every pipeline in pipelines/ runs, or fails early and
// clearly, whatever runner a user asks for. The legacy Go direct runner
// cannot execute DoFns with state and timers, so --runner=direct runs the
// pipeline on embedded prism, a local runner that can, and says so in one
// log line (as Beam Python's direct runner hands pipelines to a local runner
// that supports them). A runner that needs flags (Dataflow, a job server)
// is checked for them before any work. On prism, and on a job server that
// may be prism, it turns off prism's bundle splits, which lose the state of
// stateful DoFns (package nosplit). A job for a job server (flink, spark,
// universal, portable) goes through RunPortable: package portable sends
// Flink the options Beam Go cannot (streaming mode, the source's idle
// shutdown, checkpointing) and marks the async transforms' revert steps as
// requiring stable input, which Beam Go cannot declare on a DoFn; a job
// that ended well is a success even when the job server cannot give its
// metrics (MetricsError).
//
// Runner names are taken in any case: --runner=Prism runs on prism.
package runner

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/asyncbeam/asyncbeam/runner/nosplit"
	"github.com/asyncbeam/asyncbeam/runner/portable"
)

// Name returns the runner Run will use: the --runner flag, lower case, or
// "prism" when it is empty, names prism (prism or PrismRunner) or names the
// legacy Go direct runner.
func Name() string {
	if r := flagRunner(); r != "" && r != "prismrunner" && !isDirect(r) {
		return r
	}
	return "prism"
}

func flagRunner() string { return strings.ToLower(strings.TrimSpace(*runners.Runner)) }

// isDirect reports whether name is the legacy Go direct runner.
func isDirect(name string) bool { return name == "direct" || name == "directrunner" }

// useLocalRunner replaces --runner=direct with prism, logging why once.
func useLocalRunner() {
	if !isDirect(flagRunner()) {
		return
	}
	slog.Warn("runner: --runner=" + *runners.Runner + " asks for the legacy Go direct runner, which has no state and timers; " +
		"running on prism, embedded, instead (the default local runner; pass --runner=prism to say so)")
	*runners.Runner = "prism"
}

// Check returns an error naming the fix when the selected runner lacks a
// flag it needs, or when --async would leave the job without its worker or
// runner (checkAsync); it runs before any work. --runner=direct passes: Run
// uses prism for it.
func Check() error {
	if err := checkAsync(); err != nil {
		return err
	}
	switch name := Name(); {
	case name == "dataflow" || name == "dataflowrunner":
		return requireFlags("--runner=dataflow", "project", "region", "staging_location", "temp_location")
	case isPortable(name):
		return requireFlags("--runner="+name+" submits to a job server and", "endpoint")
	}
	return nil
}

// registered is the name Beam registers each runner under, by the lower
// case of its names: beam.Run looks names up as given.
var registered = map[string]string{
	"prism": "prism", "dataflow": "dataflow", "dataflowrunner": "DataflowRunner",
	"dot": "dot", "vet": "vet",
}

// useRegisteredName spells --runner as Beam registers it (--runner=Prism
// becomes prism), so that a name Check accepted is one beam.Run finds.
func useRegisteredName() {
	if name, ok := registered[Name()]; ok && *runners.Runner != "" {
		*runners.Runner = name
	}
}

// checkAsync refuses --async where the job would be left with nothing to
// run it once Run returns, which --async makes it do as soon as the job is
// submitted: a LOOPBACK worker runs inside this program and stops then
// (Beam Go's portable runner and RunPortable stop it on return), and
// embedded prism (no --endpoint) is itself part of this program, whatever
// the worker.
func checkAsync() error {
	if !*jobopts.Async {
		return nil
	}
	embedded := Name() == "prism" && *jobopts.Endpoint == ""
	if embedded || jobopts.IsLoopback() {
		return fmt.Errorf("runner: --async returns once the job is submitted, but this program runs the job's worker " +
			"(LOOPBACK) or its runner (embedded prism), which stop when it does: drop --async, or submit to a runner of " +
			"its own (a job server at --endpoint with a worker that runs on its own: --environment_type=PROCESS, DOCKER, " +
			"or EXTERNAL with --environment_config; or Dataflow)")
	}
	return nil
}

// requireFlags names the first flag of names that is unset.
func requireFlags(who string, names ...string) error {
	for _, name := range names {
		f := flag.Lookup(name)
		if f == nil || strings.TrimSpace(f.Value.String()) == "" {
			return fmt.Errorf("runner: %s needs --%s", who, name)
		}
	}
	return nil
}

// DryRun reports whether --dry_run asks the runner (Dataflow) to print the
// job instead of running it.
func DryRun() bool {
	f := flag.Lookup("dry_run")
	return f != nil && f.Value.String() == "true"
}

// Run checks the runner and runs p, returning its result (with metrics):
// --runner=direct runs on embedded prism (see the package doc), prism's
// bundle splits are turned off where it may run (nosplit.Use), and the
// portable runners (flink, spark, universal, portable) submit through
// RunPortable.
func Run(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	useLocalRunner()
	useRegisteredName()
	if isPortable(Name()) {
		return RunPortable(ctx, p) // which calls nosplit.Use itself
	}
	nosplit.Use()
	if *portable.Checkpointing != 0 {
		slog.Warn("runner: --checkpointing_interval is for Flink; the " + Name() + " runner does not read it")
	}
	return beamx.RunWithMetrics(ctx, p)
}

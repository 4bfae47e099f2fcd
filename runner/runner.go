// Package runner launches the project's pipelines on a Beam runner chosen by
// the standard --runner flag, with embedded prism as the default.
//
// It exists so that every pipeline in pipelines/ fails early and clearly on a
// runner that cannot execute the async transform: the legacy Go direct runner
// panics with a nil pointer on DoFns with state and timers, so Run refuses it
// with an error that says to use prism instead.
package runner

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

// Name returns the runner Run will use: the --runner flag, or "prism".
func Name() string {
	if r := strings.TrimSpace(*runners.Runner); r != "" {
		return strings.ToLower(r)
	}
	return "prism"
}

// Check returns an error naming the fix when the selected runner cannot run
// pipelines with state and timers, or lacks a flag it needs; it runs before
// any work.
func Check() error {
	switch Name() {
	case "direct", "directrunner":
		return fmt.Errorf("runner: --runner=%s is the legacy Go direct runner, which does not support state and timers; use --runner=prism (the default) for local runs", *runners.Runner)
	case "dataflow", "dataflowrunner":
		return requireFlags("--runner=dataflow", "project", "region", "staging_location", "temp_location")
	case "universal", "portable", "flink", "spark":
		return requireFlags("--runner="+Name()+" submits to a job server and", "endpoint")
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

// Run checks the runner and runs p, returning its result (with metrics).
func Run(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	return beamx.RunWithMetrics(ctx, p)
}

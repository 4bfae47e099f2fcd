package runner

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/xlangx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/vet"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// isFlink reports whether name (lower case) is one of the names Beam Go
// registers its Flink runner under.
func isFlink(name string) bool { return name == "flink" || name == "flinkrunner" }

// RunStableRevert submits p to the job server at --endpoint as Beam Go's
// portable runner does (flink and universal alike), with the revert steps
// of the async transforms marked as requiring stable input
// (async.RequireStableInput), so that on Flink Revert sees only failures
// of a completed checkpoint. Run uses it for --runner=flink. The job server
// must support stable input: Flink's does in streaming mode, with
// exactly-once checkpointing configured (it fails the job otherwise), and
// ignores it in batch mode; prism and Beam Python's job service refuse the
// requirement. A pipeline without a revert step is submitted unchanged.
func RunStableRevert(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	if !beam.Initialized() {
		return nil, fmt.Errorf("runner: call beam.Init before building the pipeline")
	}
	if *jobopts.Strict {
		if _, err := vet.Execute(ctx, p); err != nil {
			return nil, fmt.Errorf("runner: strict mode: %w", err)
		}
	}
	endpoint, err := jobopts.GetEndpoint()
	if err != nil {
		return nil, err
	}
	edges, _, err := p.Build()
	if err != nil {
		return nil, err
	}
	envCfg := jobopts.GetEnvironmentConfig
	if jobopts.IsLoopback() {
		srv, err := extworker.StartLoopback(ctx, 0)
		if err != nil {
			return nil, err
		}
		defer srv.Stop(ctx)
		envCfg = srv.EnvironmentConfig
	}
	xlangx.ResolveArtifacts(ctx, edges, nil)
	env, err := graphx.CreateEnvironment(ctx, jobopts.GetEnvironmentUrn(ctx), envCfg)
	if err != nil {
		return nil, fmt.Errorf("runner: the pipeline's environment: %w", err)
	}
	model, err := graphx.Marshal(edges, &graphx.Options{Environment: env, PipelineResourceHints: jobopts.GetPipelineResourceHints()})
	if err != nil {
		return nil, fmt.Errorf("runner: the pipeline's model: %w", err)
	}
	n, err := async.RequireStableInput(model)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		slog.Info(fmt.Sprintf("runner: marked %d revert step(s) as requiring stable input: on Flink, Revert sees only failures of a completed checkpoint (configure exactly-once checkpointing)", n))
	}
	opt := &runnerlib.JobOptions{
		Name:         jobopts.GetJobName(),
		Experiments:  jobopts.GetExperiments(),
		Worker:       *jobopts.WorkerBinary,
		RetainDocker: *jobopts.RetainDockerContainers,
		Parallelism:  *jobopts.Parallelism,
		Loopback:     jobopts.IsLoopback(),
	}
	return runnerlib.Execute(ctx, model, endpoint, opt, *jobopts.Async)
}

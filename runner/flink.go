package runner

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/apache/beam/sdks/v2/go/container/tools"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/xlangx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/vet"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// checkpointing is Flink's checkpointing_interval pipeline option, which
// Beam Go cannot pass: it sends its flags nested under one option
// (go_options) that Flink's Java options never read, so RunStableRevert
// sends this one at the top level, where they do.
var checkpointing = flag.Duration("checkpointing_interval", 0,
	"Flink: time between checkpoints (sent as Flink's checkpointing_interval option by runner.Run); "+
		"required when a revert step requires stable input (RunStableRevert)")

// batchRevert accepts Revert on Flink's batch mode, which ignores stable
// input.
var batchRevert = flag.Bool("flink_batch_revert", false,
	"Flink: run a job with a revert step and only bounded input although Flink's batch mode ignores stable input, "+
		"so that Revert can run for an element a restart then replays (refused otherwise)")

// isFlink reports whether name (lower case) is one of the names Beam Go
// registers its Flink runner under.
func isFlink(name string) bool { return name == "flink" || name == "flinkrunner" }

// checkpointingOption is the pipeline option that sets Flink's checkpoint
// interval, in milliseconds.
const checkpointingOption = "beam:option:checkpointing_interval:v1"

// stableDrainOption is Flink's pipeline option enableStableInputDrain,
// which lets a job with a stable-input step be drained: the job then runs
// the input such a step holds for the next checkpoint, which without it is
// not run at the drain (read in Beam's FlinkPipelineOptions and
// DoFnOperatorTest, not run; Flink runner versions before the option
// ignore it). For the revert step that input is failure records, final
// once the job stops, so they reach Revert and the failure output; a task
// failure during the drain itself can still replay one of them. Sent with
// the checkpoint interval.
const stableDrainOption = "beam:option:enable_stable_input_drain:v1"

// RunStableRevert submits p to the job server at --endpoint as Beam Go's
// portable runner does (flink and universal alike), with the revert steps
// of the async transforms marked as requiring stable input
// (async.RequireStableInput), so that on Flink Revert sees only failures
// of a completed checkpoint, and with --checkpointing_interval passed to
// Flink. Run uses it for --runner=flink.
//
// Flink runs a marked step in streaming mode only with checkpointing on
// (exactly-once, its default mode), and fails the job otherwise; so a job
// with a revert step, unbounded input and no --checkpointing_interval is
// refused here, before it is submitted. A job without unbounded input runs
// in Flink's batch mode, which ignores the mark: with a revert step it is
// refused unless --flink_batch_revert accepts that.
// prism and Beam Python's job service refuse the requirement. A pipeline
// without a revert step is submitted unchanged.
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
	streaming := hasUnbounded(model)
	if err := checkFlinkRevert(n, streaming, *checkpointing, *batchRevert); err != nil {
		return nil, err
	}
	switch {
	case n > 0 && streaming:
		slog.Info(fmt.Sprintf("runner: marked %d revert step(s) as requiring stable input: on Flink, Revert sees only failures of a completed checkpoint", n))
	case n > 0:
		slog.Warn(fmt.Sprintf("runner: %d revert step(s) in a job without unbounded input (--flink_batch_revert): Flink's batch mode ignores stable input, so a restart can replay an element Revert has seen fail", n))
	}
	return submit(ctx, model, endpoint)
}

// checkFlinkRevert refuses an interval Flink would refuse, and a job with
// marked revert steps (marked) that Flink would fail for want of
// checkpointing (in streaming mode: streaming) or, in batch mode, run
// without the stable input they require, unless batchOK accepts that.
func checkFlinkRevert(marked int, streaming bool, interval time.Duration, batchOK bool) error {
	if interval < 0 || (interval > 0 && interval < time.Millisecond) {
		return fmt.Errorf("runner: --checkpointing_interval=%v: want 1ms or more, or 0 for none (Flink takes milliseconds)", interval)
	}
	switch {
	case marked == 0:
	case streaming && interval == 0:
		return fmt.Errorf("runner: %d revert step(s) require stable input, which Flink runs only with checkpointing: "+
			"pass --checkpointing_interval (for example 30s; Revert's failure records wait for the next checkpoint)", marked)
	case !streaming && !batchOK:
		return fmt.Errorf("runner: %d revert step(s) in a job without unbounded input: Flink runs it in batch mode, which ignores stable input, "+
			"so Revert could run for an element that a restart then replays; give the job an unbounded input (Flink then runs it in streaming mode; Beam Go cannot set that mode otherwise), "+
			"drop Revert, or pass --flink_batch_revert to accept that", marked)
	}
	return nil
}

// hasUnbounded reports whether the model has an unbounded PCollection, as
// Flink's portable runner decides between its streaming and batch modes
// (FlinkPipelineRunner; Beam Go cannot pass its streaming option).
func hasUnbounded(model *pipepb.Pipeline) bool {
	for _, pc := range model.GetComponents().GetPcollections() {
		if pc.GetIsBounded() == pipepb.IsBounded_UNBOUNDED {
			return true
		}
	}
	return false
}

// jobOptions are the options of the job named name as Beam Go's
// runnerlib.Prepare sends them, plus the checkpoint interval at the top
// level when set.
func jobOptions(name string, interval time.Duration) (*structpb.Struct, error) {
	hooks.SerializeHooksToOptions()
	beam.PipelineOptions.LoadOptionsFromFlags(nil)
	options, err := tools.OptionsToProto(runtime.RawOptionsWrapper{
		Options:      beam.PipelineOptions.Export(),
		AppName:      name,
		Experiments:  append(jobopts.GetExperiments(), "beam_fn_api"),
		RetainDocker: *jobopts.RetainDockerContainers,
		Parallelism:  *jobopts.Parallelism,
	})
	if err != nil {
		return nil, fmt.Errorf("runner: the pipeline's options: %w", err)
	}
	if interval > 0 {
		options.Fields[checkpointingOption] = structpb.NewNumberValue(float64(interval.Milliseconds()))
		options.Fields[stableDrainOption] = structpb.NewBoolValue(true)
	}
	return options, nil
}

// submit runs the model on the job server as Beam Go's runnerlib.Execute
// does (worker binary, prepare, stage, run, wait, metrics), with
// jobOptions.
func submit(ctx context.Context, model *pipepb.Pipeline, endpoint string) (beam.PipelineResult, error) {
	bin := *jobopts.WorkerBinary
	switch {
	case jobopts.IsLoopback(): // the binary is unused
		f, err := os.CreateTemp("", "beamloopbackworker-*")
		if err != nil {
			return nil, err
		}
		f.Close()
		defer os.Remove(f.Name())
		bin = f.Name()
	case bin == "":
		if self, ok := runnerlib.IsWorkerCompatibleBinary(); ok {
			bin = self
		} else {
			worker, err := runnerlib.BuildTempWorkerBinary(ctx, runnerlib.CompileOpts{})
			if err != nil {
				return nil, err
			}
			defer os.Remove(worker)
			bin = worker
		}
	}
	if err := runnerlib.UpdateGoEnvironmentWorker(bin, model); err != nil {
		return nil, err
	}
	cc, err := grpcx.Dial(ctx, endpoint, 2*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("runner: connecting to the job service at %s: %w", endpoint, err)
	}
	defer cc.Close()
	client := jobpb.NewJobServiceClient(cc)
	name := jobopts.GetJobName() // a new one at each call when --job_name is empty
	options, err := jobOptions(name, *checkpointing)
	if err != nil {
		return nil, err
	}
	prep, err := client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: model, PipelineOptions: options, JobName: name})
	if err != nil {
		return nil, fmt.Errorf("runner: preparing the job: %w", err)
	}
	token, err := runnerlib.Stage(ctx, prep.GetPreparationId(), prep.GetArtifactStagingEndpoint().GetUrl(), bin, prep.GetStagingSessionToken())
	if err != nil {
		return nil, err
	}
	jobID, err := runnerlib.Submit(ctx, client, prep.GetPreparationId(), token)
	if err != nil {
		return nil, err
	}
	slog.Info("runner: submitted job " + jobID + " (" + name + ") to " + endpoint)
	if *jobopts.Async {
		return result{jobID: jobID}, nil
	}
	err = runnerlib.WaitForCompletion(ctx, client, jobID)
	res := result{jobID: jobID}
	m, merr := client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: jobID})
	switch {
	case merr == nil:
		res.metrics = metricsx.FromMonitoringInfos(model, m.GetMetrics().GetAttempted(), m.GetMetrics().GetCommitted())
	case err == nil:
		err = fmt.Errorf("runner: reading the job's metrics: %w", merr)
	default:
		err = fmt.Errorf("%w (and reading its metrics: %v)", err, merr)
	}
	return res, err
}

// result is a submitted job's result.
type result struct {
	jobID   string
	metrics *metrics.Results
}

func (r result) Metrics() metrics.Results {
	if r.metrics == nil {
		return metrics.Results{}
	}
	return *r.metrics
}

func (r result) JobID() string { return r.jobID }

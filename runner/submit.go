package runner

// The launcher for portable job servers (Flink's, Spark's, a prism job
// server, Beam Python's): Beam Go's portable runner, with the job completed
// by package portable and the job's outcome kept apart from its metrics.

import (
	"context"
	"errors"
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

	"github.com/asyncbeam/asyncbeam/runner/nosplit"
	"github.com/asyncbeam/asyncbeam/runner/portable"
)

// isPortable reports whether name (lower case) is a runner that submits to
// a job server at --endpoint through Beam Go's portable runner.
func isPortable(name string) bool {
	switch name {
	case "universal", "portable", "portablerunner", "flink", "flinkrunner", "spark", "sparkrunner":
		return true
	}
	return false
}

// RunPortable submits p to the job server at --endpoint as Beam Go's
// portable runner does, with the job completed by portable.Complete (on
// Flink: the options it needs, and the revert steps marked as requiring
// stable input), and waits for it unless --async. A job that ended well
// whose metrics the job server cannot give is a success: its result has
// no metrics, and MetricsError says why. Run uses it for the portable
// runners (flink, spark, universal, portable). On universal and portable
// it turns off prism's bundle splits (nosplit.Use): the job server may be
// prism.
func RunPortable(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	if !beam.Initialized() {
		return nil, fmt.Errorf("runner: call beam.Init before building the pipeline")
	}
	nosplit.Use()
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
	return submit(ctx, model, endpoint)
}

// RunStableRevert is RunPortable, under its earlier name.
//
// Deprecated: use Run, or RunPortable.
func RunStableRevert(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	return RunPortable(ctx, p)
}

// jobOptions are the options of the job named name as Beam Go's
// runnerlib.Prepare sends them.
func jobOptions(name string) (*structpb.Struct, error) {
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
	return options, nil
}

// submit runs the model on the job server as Beam Go's runnerlib.Execute
// does (worker binary, prepare, stage, run, wait, metrics), with the job
// completed by portable.Complete.
func submit(ctx context.Context, model *pipepb.Pipeline, endpoint string) (beam.PipelineResult, error) {
	bin, cleanup, err := workerBinary(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := runnerlib.UpdateGoEnvironmentWorker(bin, model); err != nil {
		return nil, err
	}
	cc, err := grpcx.DefaultDial(ctx, endpoint, 2*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("runner: connecting to the job service at %s: %w", endpoint, err)
	}
	defer cc.Close()
	client := jobpb.NewJobServiceClient(cc)
	name := jobopts.GetJobName() // a new one at each call when --job_name is empty
	options, err := jobOptions(name)
	if err != nil {
		return nil, err
	}
	req := &jobpb.PrepareJobRequest{Pipeline: model, PipelineOptions: options, JobName: name}
	if err := portable.Complete(portable.KindOf(ctx, client), req); err != nil {
		return nil, err
	}
	prep, err := client.Prepare(ctx, req)
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
	res := &result{jobID: jobID}
	if *jobopts.Async {
		res.metricsErr = errors.New("the job runs on (--async): its metrics are the job server's to give")
		return res, nil
	}
	if err := runnerlib.WaitForCompletion(ctx, client, jobID); err != nil {
		res.metricsErr = errors.New("the job failed")
		return res, err
	}
	m, err := client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: jobID})
	if err != nil {
		res.metricsErr = fmt.Errorf("the job server could not give the job's metrics: %w", err)
		slog.Warn("runner: job " + jobID + " ended well, but its metrics are missing: " + res.metricsErr.Error())
		return res, nil
	}
	res.metrics = metricsx.FromMonitoringInfos(model, m.GetMetrics().GetAttempted(), m.GetMetrics().GetCommitted())
	return res, nil
}

// workerBinary is the worker binary to stage, and what removes it after the
// job: none is needed with LOOPBACK (an empty file stands in), this program
// when it can serve as a worker, else one built for the purpose.
func workerBinary(ctx context.Context) (string, func(), error) {
	none := func() {}
	switch bin := *jobopts.WorkerBinary; {
	case jobopts.IsLoopback():
		f, err := os.CreateTemp("", "beamloopbackworker-*")
		if err != nil {
			return "", none, err
		}
		f.Close()
		return f.Name(), func() { os.Remove(f.Name()) }, nil
	case bin != "":
		return bin, none, nil
	}
	if self, ok := runnerlib.IsWorkerCompatibleBinary(); ok {
		return self, none, nil
	}
	worker, err := runnerlib.BuildTempWorkerBinary(ctx, runnerlib.CompileOpts{})
	if err != nil {
		return "", none, err
	}
	return worker, func() { os.Remove(worker) }, nil
}

// result is a submitted job's result. Its metrics are empty when the job
// server could not give them (metricsErr says why).
type result struct {
	jobID      string
	metrics    *metrics.Results
	metricsErr error
}

func (r *result) Metrics() metrics.Results {
	if r == nil || r.metrics == nil {
		return metrics.Results{}
	}
	return *r.metrics
}

func (r *result) JobID() string {
	if r == nil {
		return ""
	}
	return r.jobID
}

// MetricsError says why a result of Run has no metrics: nil when it has
// them, or when the runner does not say (a result Run did not make).
func MetricsError(r beam.PipelineResult) error {
	if res, ok := r.(*result); ok && res != nil {
		return res.metricsErr
	}
	return nil
}

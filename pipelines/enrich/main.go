// Command enrich is the project's main job: it reads JSON Lines records, keys
// them by a field, enriches each one with a call to an HTTP service through
// the async transform, and writes the enriched records as JSON Lines.
//
// With no flags it runs on embedded prism against an enrichment service it
// starts on loopback, over a sample of 3,000 order records shipped in data/:
//
//	go run ./pipelines/enrich
//
// Records whose calls fail for good (after --max_attempts, or rejected by the
// service) are written to failures.jsonl next to enriched.jsonl. The job ends
// with one summary line:
//
//	records: in=N out=M failed=F wall=D throughput=R/s parallelism=P failures: kind=n ...
//
// and exits non-zero if any input record is missing from both outputs or
// appears more than once across them.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/runner"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

func init() {
	register.DoFn3x0[numberedLine, func(string, record), func(badLine)](&keyByField{})
	register.DoFn3x1[context.Context, string, func(numberedLine), error](&readLines{})
	register.Emitter2[string, record]()
	register.Emitter1[badLine]()
	register.Emitter1[numberedLine]()
	register.Function1x2(badInputJSON)
	register.DoFn4x1[context.Context, string, record, func(string), error](&enrichFn{})
	register.Function1x1(recordPriority)
	register.Emitter1[string]()
	register.Function1x2(failureJSON)
	beam.RegisterType(reflect.TypeOf((*enrichBatchFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*profileLookup)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*profileBatchLookup)(nil)).Elem())
	register.Function2x2[record, string, string, error](mergeProfile)
}

func main() {
	flag.Parse()
	beam.Init()
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "enrich:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	if !*verbose && !runner.DryRun() {
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	if err := runner.Check(); err != nil {
		return err
	}
	if *jobopts.Async {
		return fmt.Errorf("--async: this job waits for its run to summarise the outputs (and, without --service_url, serves its lookup service meanwhile); run it without --async")
	}
	outDir, err := outputDir()
	if err != nil {
		return err
	}
	inPath, err := inputPath(outDir)
	if err != nil {
		return err
	}
	inIDs, err := inputIDs(inPath)
	if err != nil {
		return err
	}
	url, svc, err := endpoint()
	if err != nil {
		return err
	}
	if svc != nil {
		defer svc.stop(context.Background())
	}
	fmt.Printf("enrich: %d records from %s, key %q, service %s, runner %s\n", len(inIDs), inPath, *keyField, url, runner.Name())
	out := files{enriched: filepath.Join(outDir, "enriched.jsonl"), failures: filepath.Join(outDir, "failures.jsonl")}
	p, err := pipeline(inPath, url, out)
	if err != nil {
		return err
	}
	start := time.Now()
	stopProgress := showProgress(svc, len(inIDs), start)
	res, err := runner.Run(ctx, p)
	stopProgress()
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("pipeline failed: %w", err)
	}
	if runner.DryRun() {
		fmt.Println("enrich: dry run: the runner printed the job above; nothing was executed")
		return nil
	}
	return report(res, inIDs, out, wall, svc)
}

// endpoint is the service the job calls: --service_url, or else a loopback
// service it starts, at the path of the job's form. The caller stops a
// service it returns.
func endpoint() (url string, svc *service, err error) {
	url = *serviceURL
	if url != "" {
		return url, nil, nil
	}
	limits := serviceLimits{Capacity: *svcCapacity, Rate: *svcRate, CapacityLater: *svcLater, CapacityLaterAt: *svcLaterAt, Shed: *svcShed}
	if svc, err = startService(*latency, *itemCost, *errorRate, limits); err != nil {
		return "", nil, err
	}
	url = svc.url
	switch {
	case lookupForm() && *batchSize > 0:
		url += "/profile/batch"
	case lookupForm():
		url += "/profile"
	case *batchSize > 0:
		url += "/batch"
	}
	return url, svc, nil
}

// report prints what the run's metrics show and, when the service or the
// calls were limited, what the loopback service saw; then it checks the
// outputs against the input (summarize) and, with --events, the events.
func report(res beam.PipelineResult, inIDs []string, out files, wall time.Duration, svc *service) error {
	var calls callFigures
	if res != nil {
		fmt.Println(metricsLine(res))
		calls = callFiguresOf(res)
	}
	if svc != nil && (*rateLimit > 0 || *sharedRate > 0 || *svcCapacity > 0 || *svcRate > 0 || *svcShed > 0) {
		fmt.Print(serviceLines(svc))
	}
	if err := summarize(inIDs, out, wall, svc, calls); err != nil {
		return err
	}
	if *events != "" {
		return summarizeEvents(*events)
	}
	return nil
}

// files are the job's outputs.
type files struct{ enriched, failures string }

// pipeline builds the job: read numbered lines, key them (bad lines become
// failures), enrich through the async transform, write both outputs.
func pipeline(inPath, url string, out files) (*beam.Pipeline, error) {
	p, s := beam.NewPipelineWithRoot()
	lines := beam.ParDo(s, &readLines{}, beam.Create(s, inPath))
	keyed, bad := beam.ParDo2(s, &keyByField{Field: *keyField, PriorityField: *priority}, lines)
	opts, err := asyncOptions()
	if err != nil {
		return nil, err
	}
	var enriched, failures beam.PCollection
	if lookupForm() {
		enriched, failures, err = lookupPipeline(s, keyed, url, *cacheFlag != "", *batchSize > 0, opts)
	} else if *batchSize > 0 {
		enriched, failures, err = async.TryBatchParDoWithFailures(s, &enrichBatchFn{clientOf(url)}, keyed, opts...)
	} else {
		enriched, failures, err = async.TryParDoWithFailures(s, &enrichFn{clientOf(url)}, keyed, opts...)
	}
	if err != nil {
		return nil, err
	}
	textio.Write(s, out.enriched, enriched)
	textio.Write(s, out.failures, beam.Flatten(s, beam.ParDo(s, failureJSON, failures), beam.ParDo(s, badInputJSON, bad)))
	return p, nil
}

func outputDir() (string, error) {
	if *output != "" {
		return *output, os.MkdirAll(*output, 0o755)
	}
	return os.MkdirTemp("", "enrich-")
}

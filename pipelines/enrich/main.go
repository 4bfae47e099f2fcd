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
	_ "embed"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/runner"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

//go:embed data/records.jsonl
var sampleRecords []byte

var (
	input       = flag.String("input", "", "JSON Lines file to enrich (default: the 3,000 sample records shipped with the job, or --generate)")
	generate    = flag.Int("generate", 0, "enrich this many generated order records instead of the sample (see --customers)")
	customers   = flag.Int("customers", 20000, "with --generate: how many customers the records are spread over (the key)")
	badLines    = flag.Int("bad_lines", 0, "with --generate: how many of the lines are malformed (they go to failures.jsonl as bad_input)")
	output      = flag.String("output", "", "directory for enriched.jsonl (default: a new temporary directory, printed)")
	keyField    = flag.String("key_field", "customer_id", "record field whose value keys the records")
	serviceURL  = flag.String("service_url", "", "enrichment service endpoint taking POSTed JSON records (default: start one on loopback)")
	latency     = flag.Duration("latency", 20*time.Millisecond, "latency of each call to the loopback service")
	errorRate   = flag.Float64("error_rate", 0, "share of calls the loopback service fails with 500, from 0 to 1")
	svcCapacity = flag.Int("service_capacity", 0, "the loopback service serves this many calls at once, queues as many more (latency grows), and answers 503 with Retry-After past that (0: no limit)")
	svcRate     = flag.Int("service_rate", 0, "the loopback service answers 429 with Retry-After past this many calls in a second (0: no limit)")
	svcShed     = flag.Float64("overload_rate", 0, "share of calls the loopback service answers 503 with Retry-After at random, whatever the load (a service that sheds a little), from 0 to 1")
	svcLater    = flag.Int("service_capacity_later", 0, "with --service_capacity: the capacity from --service_capacity_at on")
	svcLaterAt  = flag.Duration("service_capacity_at", 0, "when (after the service's start) --service_capacity_later applies")
	rateLimit   = flag.Float64("rate_limit", 0, "calls started per second per worker, at most (0: no limit)")
	rateBurst   = flag.Int("rate_burst", 0, "calls that --rate_limit or --shared_rate_limit lets start at once (0: a hundredth of the rate, at least 1)")
	sharedRate  = flag.Float64("shared_rate_limit", 0, "calls started per second by all workers together, kept in Redis (--redis); 0: no limit")
	redisAddr   = flag.String("redis", os.Getenv("ASYNCBEAM_REDIS"), "Redis host:port for --shared_rate_limit (default $ASYNCBEAM_REDIS)")
	rateKey     = flag.String("rate_key", "asyncbeam:enrich", "the Redis bucket of --shared_rate_limit: jobs with the same key share the rate")
	overloadAt  = flag.Float64("overload_threshold", 0, "share of refused attempts above which each worker paces its calls (async.WithOverloadThreshold; 0: the transform's default, 0.2)")
	adaptive    = flag.String("adaptive", "", "MIN,MAX: let the calls at once move between MIN and MAX from the service's latency and overload answers (replaces --concurrency)")
	callTimeout = flag.Duration("call_timeout", 5*time.Second, "deadline of one attempt of a call (0: none)")
	maxAttempts = flag.Int("max_attempts", 3, "attempts per record before it is written to failures.jsonl")
	backoff     = flag.Duration("backoff", 50*time.Millisecond, "delay before the first retry, doubling up to 5s")
	concurrency = flag.Int("concurrency", 32, "calls in flight at once per worker (the async transform's parallelism)")
	buffer      = flag.Int("buffer", 0, "elements in flight per worker, waiting for a slot or running (0: the transform's default, max(2*concurrency, 10), or max(2*concurrency*batch_size, 10) with batches)")
	held        = flag.Int("held", 0, "elements held per worker, in flight or awaiting commit: the memory bound (0: the transform's default, max(64*concurrency, buffer), or max(64*concurrency*batch_size, buffer) with batches)")
	ordered     = flag.Bool("ordered", false, "commit each key's records in input order")
	priority    = flag.String("priority_field", "", "record field holding an integer priority: higher starts first when calls wait for a slot")
	events      = flag.String("events", "", "write every record's lifecycle events to this JSON Lines file (on the worker)")
	frequency   = flag.Duration("callback_frequency", time.Second, "commit timer period for unbounded input")
	httpTimeout = flag.Duration("http_timeout", 10*time.Second, "timeout of one HTTP call")
	verbose     = flag.Bool("verbose", false, "show the runner's own log lines")
	batchSize   = flag.Int("batch_size", 0, "send records to the service's batch endpoint, up to this many per call (async.BatchParDo; 0: one record per call); with --lookup_by_customer or --cache, look up that many customers per call (async.BatchEnrich)")
	batchWait   = flag.Duration("batch_wait", 0, "with --batch_size: how long a batch that is not full waits for more records")
	itemCost    = flag.Duration("batch_item_cost", 200*time.Microsecond, "latency the loopback service adds per record of a batch call, on top of --latency")
	byCustomer  = flag.Bool("lookup_by_customer", false, "look up each record's customer (the --key_field value) profile and join it to the records by customer, instead of enriching each record by its own call, with async.Enrich (without --cache: async.WithoutCache, a lookup per record, the uncached baseline); the loopback service's /enrich/profile answers, a --service_url must take {\"customer_id\": X} and answer a JSON object (with --batch_size: take a JSON list of customer IDs and answer a list of objects, one per ID)")
	cacheFlag   = flag.String("cache", "", "SIZE,TTL: look profiles up with async.Enrich, one call per customer, keeping them in each worker (async.WithCache, such as 100000,10m); implies --lookup_by_customer")
	sharedCache = flag.Bool("shared_cache", false, "with --cache: keep the profiles in Redis (--redis) too, shared by workers and runs")
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
	url := *serviceURL
	var svc *service
	if url == "" {
		limits := serviceLimits{Capacity: *svcCapacity, Rate: *svcRate, CapacityLater: *svcLater, CapacityLaterAt: *svcLaterAt, Shed: *svcShed}
		if svc, err = startService(*latency, *itemCost, *errorRate, limits); err != nil {
			return err
		}
		defer svc.stop(context.Background())
		url = svc.url
		switch {
		case lookupForm() && *batchSize > 0:
			url += "/profile/batch"
		case lookupForm():
			url += "/profile"
		case *batchSize > 0:
			url += "/batch"
		}
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

// asyncOptions are the async transform's options, from the flags.
func asyncOptions() ([]async.Option, error) {
	opts := []async.Option{async.WithCallbackFrequency(*frequency),
		async.WithCallTimeout(*callTimeout), async.WithMaxAttempts(*maxAttempts), async.WithBackoff(async.ExponentialBackoff(*backoff, 5*time.Second))}
	if *adaptive != "" {
		var lo, hi int
		if _, err := fmt.Sscanf(*adaptive, "%d,%d", &lo, &hi); err != nil {
			return nil, fmt.Errorf("--adaptive=%q: want MIN,MAX, such as 4,64", *adaptive)
		}
		opts = append(opts, async.WithAdaptiveParallelism(lo, hi))
	} else {
		opts = append(opts, async.WithParallelism(*concurrency))
	}
	if *overloadAt != 0 {
		opts = append(opts, async.WithOverloadThreshold(*overloadAt))
	}
	if *rateLimit > 0 {
		opts = append(opts, async.WithRateLimit(*rateLimit, burstFor(*rateLimit)))
	}
	if *sharedRate > 0 {
		if *redisAddr == "" {
			return nil, fmt.Errorf("--shared_rate_limit needs --redis host:port (integration/redis.sh starts one)")
		}
		opts = append(opts, async.WithSharedRateLimit(async.SharedRateLimit{Redis: *redisAddr, Key: *rateKey, PerSecond: *sharedRate, Burst: burstFor(*sharedRate)}))
	}
	if *cacheFlag != "" {
		c, err := cacheOption()
		if err != nil {
			return nil, err
		}
		opts = append(opts, c)
	} else if *sharedCache {
		return nil, fmt.Errorf("--shared_cache needs --cache SIZE,TTL")
	}
	if *batchSize > 0 {
		opts = append(opts, async.WithBatchSize(*batchSize), async.WithBatchWait(*batchWait))
	} else if *batchSize < 0 || *batchWait != 0 {
		return nil, fmt.Errorf("--batch_size=%d, --batch_wait=%v: give --batch_size > 0 to batch, or neither", *batchSize, *batchWait)
	}
	if *buffer > 0 {
		opts = append(opts, async.WithMaxItemsToBuffer(*buffer))
	}
	if *held > 0 {
		opts = append(opts, async.WithMaxItemsHeld(*held))
	}
	if *ordered {
		opts = append(opts, async.WithOrdered())
	}
	if *priority != "" {
		opts = append(opts, async.WithPriority(recordPriority))
	}
	if *events != "" {
		opts = append(opts, async.WithListener(&async.JSONLinesListener{Path: *events}))
	}
	return opts, nil
}

// lookupForm says whether the job looks up customer profiles and joins
// them (lookup.go) rather than enriching each record by its own call.
func lookupForm() bool { return *byCustomer || *cacheFlag != "" }

// cacheOption is WithCache from --cache and --shared_cache, for
// async.Enrich: profiles cached by customer, the records' key.
func cacheOption() (async.Option, error) {
	sizeText, ttlText, ok := strings.Cut(*cacheFlag, ",")
	size, err := strconv.Atoi(sizeText)
	ttl, ttlErr := time.ParseDuration(ttlText)
	if !ok || err != nil || ttlErr != nil || size <= 0 || ttl <= 0 {
		return nil, fmt.Errorf("--cache=%q: want SIZE,TTL with both > 0, such as 100000,10m", *cacheFlag)
	}
	c := async.Cache{Size: size, TTL: ttl}
	if *sharedCache {
		if *redisAddr == "" {
			return nil, fmt.Errorf("--shared_cache needs --redis host:port (integration/redis.sh starts one)")
		}
		// Profiles are the same for one service and one key field: runs
		// against the loopback service (whose answers do not change) share
		// them; another service or key field does not see them.
		service := *serviceURL
		if service == "" {
			service = "loopback"
		}
		c.Redis, c.Prefix = *redisAddr, "asyncbeam:enrich:profiles:"+*keyField+":"+service
	}
	return async.WithCache(c), nil
}

// burstFor is --rate_burst, or a hundredth of the rate.
func burstFor(rate float64) int {
	if *rateBurst > 0 {
		return *rateBurst
	}
	return max(1, int(rate/100))
}

// summarizeEvents counts the events the listener wrote, by type, and with
// --ordered checks that each key's records were committed in the order they
// were accepted.
func summarizeEvents(path string) error {
	evs, err := async.ReadEvents(path)
	if err != nil {
		return fmt.Errorf("reading the events: %w", err)
	}
	count := map[async.EventType]int{}
	for _, e := range evs {
		count[e.Type]++
	}
	line := fmt.Sprintf("events: %s:", path)
	for _, t := range []async.EventType{async.EventAccepted, async.EventStarted, async.EventSucceeded, async.EventRetrying,
		async.EventFailed, async.EventCommitted, async.EventRescheduled, async.EventCancelled, async.EventDeduplicated} {
		line += fmt.Sprintf(" %s=%d", t, count[t])
	}
	fmt.Println(line)
	if !*ordered {
		return nil
	}
	keys, err := checkOrder(evs)
	if err != nil {
		return err
	}
	fmt.Printf("order: each of %d keys committed its records in input order\n", keys)
	return nil
}

// checkOrder compares, per key, the order of the committed events with the
// order of the accepted ones (records that failed for good left out).
func checkOrder(evs []async.Event) (keys int, err error) {
	accepted, committed := map[string][]string{}, map[string][]string{}
	seen, done := map[string]bool{}, map[string]bool{}
	for _, e := range evs {
		id := e.KeyText + "/" + e.ElementID
		switch e.Type {
		case async.EventAccepted:
			if !seen[id] {
				seen[id] = true
				accepted[e.KeyText] = append(accepted[e.KeyText], e.ElementID)
			}
		case async.EventCommitted:
			done[id] = true
			committed[e.KeyText] = append(committed[e.KeyText], e.ElementID)
		}
	}
	for key, ids := range accepted {
		var want []string
		for _, id := range ids {
			if done[key+"/"+id] {
				want = append(want, id)
			}
		}
		if got := committed[key]; !slices.Equal(got, want) {
			return 0, fmt.Errorf("key %s: records committed in order %v, accepted in order %v", key, got, want)
		}
	}
	return len(accepted), nil
}

func outputDir() (string, error) {
	if *output != "" {
		return *output, os.MkdirAll(*output, 0o755)
	}
	return os.MkdirTemp("", "enrich-")
}

// inputIDs reads the input file and returns, for each non-empty line, how
// the final check finds it among the outputs (see accountingID).
func inputIDs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening input: %w", err)
	}
	defer f.Close()
	var ids []string
	err = eachLine(f, func(n int, line string) error {
		ids = append(ids, accountingID(n, line))
		return nil
	})
	return ids, err
}

// showProgress prints the loopback service's call count every second: a
// live line on a terminal, plain lines otherwise. The returned func stops it
// and waits for its goroutine.
func showProgress(svc *service, total int, start time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	live := isTerminal(os.Stdout)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				if live {
					fmt.Println()
				}
				return
			case <-tick.C:
				line := fmt.Sprintf("progress: elapsed=%s", time.Since(start).Round(time.Second))
				if svc != nil {
					line += fmt.Sprintf(" calls=%d/%d in_flight=%d", svc.calls.Load(), total, svc.inFlight.Load())
				}
				if live {
					fmt.Printf("\r%-70s", line)
				} else {
					fmt.Println(line)
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// callFigures are the guard's counts from the Beam metrics: calls made,
// calls answered with overload, and the concurrency limit at the end.
type callFigures struct {
	calls, overloaded, limit int64
	requests, requestItems   int64 // with --batch_size
	cacheHits, cacheMisses   int64 // with --cache
}

func callFiguresOf(res beam.PipelineResult) callFigures {
	var f callFigures
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if strings.Contains(c.Namespace(), "async.") {
			switch c.Name() {
			case async.MetricCalls:
				f.calls += c.Result()
			case async.MetricOverloaded:
				f.overloaded += c.Result()
			case async.MetricRequests:
				f.requests += c.Result()
			case async.MetricRequestItems:
				f.requestItems += c.Result()
			case async.MetricCacheHits:
				f.cacheHits += c.Result()
			case async.MetricCacheMisses:
				f.cacheMisses += c.Result()
			}
		}
	}
	for _, g := range res.Metrics().AllMetrics().Gauges() {
		if strings.Contains(g.Namespace(), "async.") && g.Name() == async.MetricConcurrencyLimit {
			f.limit = g.Result().Value
		}
	}
	return f
}

// serviceLines prints what the loopback service saw in each second: calls
// arrived, served and refused for load; and the calls arrived per second in
// each 5 s window.
func serviceLines(svc *service) string {
	secs := svc.perWindow(time.Second)
	var b strings.Builder
	for _, part := range []struct {
		name string
		of   func(slot) int64
	}{{"arrived", func(c slot) int64 { return c.arrived }}, {"served", func(c slot) int64 { return c.served }},
		{"refused", func(c slot) int64 { return c.refused }}, {"retries", func(c slot) int64 { return c.retries }}} {
		fmt.Fprintf(&b, "service: %s per second:", part.name)
		for _, c := range secs {
			fmt.Fprintf(&b, " %d", part.of(c))
		}
		b.WriteString("\n")
	}
	b.WriteString("service: calls arrived per second in each 5 s window:")
	for _, c := range svc.perWindow(5 * time.Second) {
		fmt.Fprintf(&b, " %.0f", float64(c.arrived)/5)
	}
	b.WriteString("\n")
	return b.String()
}

// metricsLine prints the async transform's Beam metrics.
func metricsLine(res beam.PipelineResult) string {
	counters := map[string]int64{}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if strings.Contains(c.Namespace(), "async.") {
			counters[c.Name()] += c.Result()
		}
	}
	line := "metrics:"
	for _, name := range []string{async.MetricAccepted, async.MetricStarted, async.MetricCommitted, async.MetricRetried,
		async.MetricFailed, async.MetricRescheduled, async.MetricCancelled, async.MetricDeduplicated,
		async.MetricCalls, async.MetricOverloaded, async.MetricThrottled, async.MetricThrottledMs, async.MetricBudgetWaits} {
		line += fmt.Sprintf(" %s=%d", name, counters[name])
	}
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if v := d.Result(); strings.Contains(d.Key.Namespace, "async.") && v.Count > 0 {
			line += fmt.Sprintf(" %s(mean/max)=%d/%d", d.Key.Name, v.Sum/v.Count, v.Max)
		}
	}
	return line
}

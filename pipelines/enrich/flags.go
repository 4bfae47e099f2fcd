package main

// The job's flags, and the async transform's options built from them.

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

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

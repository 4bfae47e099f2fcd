// Command bench measures what the async transform costs against what a Go
// user would otherwise write, on the same workloads, against the runner's
// own cost of moving the elements and against the limit N × mean L / P.
//
//	go run ./pipelines/bench --suites batch,stream   # some suites
//	go run ./pipelines/bench                         # every suite (over an hour)
//
// Every run has two processes of its own: a prism job server, built once per
// invocation from this module's Beam version and started by the bench on
// free ports, and a worker process that submits the pipeline to it and runs
// the SDK worker inside (LOOPBACK): a child of this program, or Beam
// Python. The worker's and the runner's CPU time (user + system) and peak
// RSS come from their rusage and are reported apart, and their CPU is
// sampled every 500 ms.
//
// On any portable job server instead (Flink's, a prism job server, Beam
// Python's job service), started by someone else:
//
//	go run ./pipelines/bench --suites stream --endpoint=HOST:PORT [--runner=flink]
//
// Every run then submits to it with Beam's --runner as given (universal by
// default) and its SDK worker in the worker process (LOOPBACK, the only
// --environment_type the sink can count in), and the rows name the runner
// and the endpoint. The job server's process is not the bench's: its CPU
// time and memory, and the sums with them, read "not measured", and the CPU
// targets are not judged. Flags that choose or profile a prism of the
// bench's (--prism, --robust_modes, --robust_p, --runner_cpuprofile) are
// refused, and so are the suites that run the enrich job on embedded prism
// (service, fewer's bounded half). Beam's and the launcher's flags given to
// the bench (--checkpointing_interval, --experiments, ...) go to every Go
// worker process as given, in every mode.
//
// Every contender runs in one pipeline shape: the source (bounded input, or
// a periodic impulse that starts --lead after construction), keyed and
// windowed, a Reshuffle, the contender, a Reshuffle, and a sink that checks
// each element came out exactly once per window. Contenders:
//
//   - async: this project's transform with its defaults.
//   - async-drain: async with WithEndOfInputDrain: the cost of the
//     end-of-input drain's records and state, by difference.
//   - bundle: goroutines in the bundle, at most P at once, flushed in
//     FinishBundle.
//   - eager: bundle that also emits every finished result from each
//     ProcessElement, with its element's timestamp.
//   - passthrough: a ParDo that emits its input with no call: the floor,
//     what the runner costs to move the elements.
//   - timeronly: async's state and timers with no call (a key's first
//     ProcessElement in a bundle and its timer emit and clear its bag; each
//     element is added to it and sets the timer by async's rules): what the
//     runner costs for async's stateful design before any call.
//   - python: Beam Python's AsyncWrapper (after
//     pipelines/bench/python/setup.sh), on unbounded input.
//   - sync: a plain ParDo, one call at a time; one row of the batch suite.
//
// bundle and eager are not run in windows other than the global one: their
// FinishBundle outputs land in the global window in Beam Go.
//
// Suites: batch (bounded input over key shapes), windowed (bounded input in
// fixed and sliding windows), stream (an unbounded source at rates, key
// counts and --stream_windows), windows (unbounded input in the
// --window_kinds), csweep (callback frequencies), overload (a source above
// capacity), heavytail (2% of calls 50 × slower), hotkey (one key), steady
// (a longer source), sparse (a key sees an element about once a minute) and
// quiet (a burst, then a source with nothing to emit: CPU while idle);
// and, only when named, service and fewer (see their files). Runs
// on an unbounded source are repeated (--repeat), interleaved: every spec
// once, then every spec again; tables give the median with min and max.
// The program prints the commit it started at, a markdown table per suite
// and the project's targets, each met, missed or not judged; --json writes
// it all as JSON, and --report prints a saved run again.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

var (
	suitesFlag       = flag.String("suites", strings.Join(suiteNames, ","), "suites to run: "+strings.Join(suiteNames, ", ")+"; and service (issue 21: the enrich job against a service with a capacity, run only when named; its shared-rate row needs $ASYNCBEAM_REDIS), fewer (issue 22: unbounded rows of async.ParDo and BatchParDo at 0.8 of their limits, then the enrich job with one record per call, with batches and with the cache; run only when named)")
	latency          = flag.Duration("latency", 20*time.Millisecond, "latency L of one call")
	par              = flag.Int("p", 64, "parallelism P of async, bundle, eager and python")
	freq             = flag.Duration("c", time.Second, "callback frequency C of async and python (and timeronly's timer period)")
	mode             = flag.String("call", "sleep", "the call: sleep, or http (a loopback service with the latency)")
	lead             = flag.Duration("lead", 2*time.Second, "an unbounded source starts this long after pipeline construction, for every contender: the time a job takes to come up on the job server, with margin (measured here: 0.03 s for a Go child, 0.55 s for Beam Python; run with --lead 0 to see it in the startup figure)")
	batchNs          = flag.String("batch_n", "20000,100000", "batch: input sizes (windowed: the first)")
	batchKeys        = flag.String("batch_keys", "1,100,2000,n", "batch: key counts (n: one key per element)")
	batchContenders  = flag.String("batch_contenders", "passthrough,timeronly,bundle,eager,async", "batch: contenders, of "+strings.Join(callers, ", "))
	batchSync        = flag.Bool("batch_sync", true, "batch: also one row of sync (a plain ParDo, one call at a time) at N=1,000 over 100 keys, about 20 s")
	streamRates      = flag.String("stream_rates", "0.4,0.6,0.8,0.9", "stream: source rates as shares of P/L")
	streamKeys       = flag.String("stream_keys", "100,1000,10000", "stream: key counts")
	streamContenders = flag.String("stream_contenders", "passthrough,timeronly,bundle,eager,async", "stream: contenders, of "+strings.Join(callers, ", ")+" (python has a suite of its own)")
	prismMode        = flag.String("prism", "embedded", "where prism runs for the Go workers: embedded (in the worker's process, as runner.Run and the tests run it; CPU split by a profile) or jobserver (a process of its own per run; python always runs on one); refused with --endpoint, which sends every run to the job server there")
	streamWindows    = flag.String("stream_windows", "global", "stream: window kinds, each global, fixed:D, sliding:SIZE/PERIOD or sessions:GAP")
	streamFor        = flag.Duration("stream_for", 5*time.Second, "how long an unbounded source emits (stream, windows, csweep, heavytail, hotkey; quiet's burst)")
	windowKinds      = flag.String("window_kinds", "fixed:1s,fixed:10s,sessions:2s", "windows: window kinds, as --stream_windows")
	overloadFor      = flag.Duration("overload_for", 15*time.Second, "overload: how long the source emits")
	steadyFor        = flag.Duration("steady_for", 30*time.Second, "steady: how long the source emits")
	sparseFor        = flag.Duration("sparse_for", time.Minute, "sparse: how long the source emits")
	quietIdle        = flag.Duration("quiet_idle", 30*time.Second, "quiet: how long the source keeps ticking without elements after its burst")
	fewerP           = flag.Int("fewer_p", 2, "fewer: the parallelism of its unbounded rows")
	fewerExtra       = flag.String("fewer_extra", "10,50", "fewer: batch sizes of extra unbounded rows at the bounded half's parallelism 8 (empty: none)")
	fewerBatches     = flag.String("fewer_batches", "1,10,50,200", "fewer: the batch sizes of its unbounded rows (1: async.ParDo, one element a call)")
	fewerBounded     = flag.Bool("fewer_bounded", true, "fewer: also run its bounded half (the enrich job, batches and the cache)")
	cSweep           = flag.String("c_sweep", "100ms,250ms,1s", "csweep: callback frequencies")
	robustModes      = flag.String("robust_modes", "embedded,jobserver", "robust: prism modes, of embedded and jobserver (refused with --endpoint: its rows run there at --robust_jobserver_p)")
	robustC          = flag.String("robust_c", "100ms,1s,5s", "robust: callback frequencies")
	robustKeys       = flag.String("robust_keys", "10,100,1000,10000", "robust: key counts")
	robustRates      = flag.String("robust_rates", "0.4,0.9", "robust: source rates as shares of P/L")
	robustContenders = flag.String("robust_contenders", "bundle,timeronly,async", "robust: contenders, of async, async-drain, bundle, eager, passthrough, timeronly, roundtimer")
	robustP          = flag.Int("robust_p", 64, "robust: the parallelism on embedded prism")
	robustJobServerP = flag.Int("robust_jobserver_p", 16, "robust: the parallelism on the prism job server, and on the job server at --endpoint")
	repeat           = flag.Int("repeat", 3, "runs of each unbounded-source workload but steady (median, min and max are reported)")
	runTimeout       = flag.Duration("run_timeout", 15*time.Minute, "give up on a run (and count it failed) after this long")
	jsonPath         = flag.String("json", "", "also write the results as JSON to this file (refused on a work tree with changes, unless --allow_dirty)")
	allowDirty       = flag.Bool("allow_dirty", false, "with --json, run on a work tree that differs from its commit (the run is stamped COMMIT+dirty)")
	chartsDir        = flag.String("charts", "", "also draw the charts (stream.png, batch.png, csweep.png) into this directory")
	reportPath       = flag.String("report", "", "run nothing: print the tables and targets of a file written by --json (and draw --charts from it)")
	asyncBuffer      = flag.Int("async_buffer", 0, "async WithMaxItemsToBuffer (0: the transform's default)")
	asyncHeld        = flag.Int("async_held", 0, "async WithMaxItemsHeld (0: the transform's default)")
	child            = flag.String("child", "", "internal: run this spec (JSON) and print its result as JSON")
	cpuProfile       = flag.String("cpuprofile", "", "write a CPU profile of each Go worker process here (the last run's remains)")
	runnerProfile    = flag.String("runner_cpuprofile", "", "with a job server the bench starts (ignored on embedded prism; refused with --endpoint): run it from this program (prism's job server without its web UI) and write a CPU profile of it here (the last run's remains)")
	serveJobServerOn = flag.Int("serve_jobserver", 0, "internal: serve prism's job server on this port, profiling it into --runner_cpuprofile")
)

func main() {
	flag.Parse()
	if *serveJobServerOn != 0 {
		if err := serveJobServer(*serveJobServerOn, *runnerProfile); err != nil {
			fmt.Fprintln(os.Stderr, "bench: job server:", err)
			os.Exit(1)
		}
		return
	}
	beam.Init()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if *child != "" {
		var s spec
		if err := json.Unmarshal([]byte(*child), &s); err != nil {
			fmt.Fprintln(os.Stderr, "bench: bad --child:", err)
			os.Exit(2)
		}
		res, err := runChild(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s %s: %v\n", s.Contender, s.shape(), err)
			os.Exit(1)
		}
		json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	run := runAll
	if *reportPath != "" {
		run = reportFile
	}
	err := run()
	removePrism()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// runAll runs the suites asked for: the harness's specs first, then the
// suites that run the enrich job in processes of their own (service, the
// bounded half of fewer).
func runAll() error {
	names, service, fewer := withoutProcessSuites(list(*suitesFlag))
	var processSuites []string
	if service {
		processSuites = append(processSuites, "service (leave it out of --suites)")
	}
	if fewer && *fewerBounded {
		processSuites = append(processSuites, "fewer's bounded half (--fewer_bounded=false)")
	}
	ext, err := chooseExternal(setFlags(), processSuites)
	if err != nil {
		return err
	}
	specs, err := suites(names, ext)
	if err != nil {
		return err
	}
	if len(specs) > 0 {
		if err := runSpecs(specs, ext); err != nil {
			return err
		}
	}
	var errs []error
	if service {
		if err := runServiceSuite(); err != nil {
			errs = append(errs, fmt.Errorf("service suite: %w", err))
		}
	}
	if fewer && *fewerBounded {
		if err := runFewerSuite(); err != nil {
			errs = append(errs, fmt.Errorf("fewer suite: %w", err))
		}
	}
	return errors.Join(errs...)
}

// runSpecs runs every spec once, then every spec that repeats once more,
// and so on, so that a slow patch of the machine falls on every contender
// rather than on one row's repeats.
func runSpecs(specs []spec, ext external) error {
	co := startCheckout()
	if *jsonPath != "" && co.dirty != "" && !*allowDirty {
		return fmt.Errorf("the work tree differs from commit %s (%s): commit, or pass --allow_dirty to write a run stamped %s", co.commit, co.dirty, co.stamp())
	}
	started := time.Now()
	fmt.Println(header(co.stamp(), ext))
	rows := make([]row, len(specs))
	skipped := make([]bool, len(specs))
	rounds := 0
	for i, s := range specs {
		rows[i] = row{spec: s}
		if s.Contender == "python" {
			rows[i].Note = pythonNote
		}
		if why := skip(s); why != "" {
			rows[i].Note, skipped[i] = "skipped: "+why, true
			continue
		}
		rounds = max(rounds, runsOf(s))
	}
	for round := range rounds {
		for i, s := range specs {
			if skipped[i] || round >= runsOf(s) {
				continue
			}
			res := runOnce(s)
			rows[i].Runs = append(rows[i].Runs, res)
			one := row{spec: s, Runs: []result{res}}
			fmt.Printf("   %d/%d %-9s %-11s %-44s %s\n", round+1, runsOf(s), s.Suite, s.Contender, s.shape(), one.summary())
		}
	}
	return finish(co.stamp(), started, rows, ext)
}

// finish prints the tables and targets of rows, and writes the JSON and the
// charts asked for; ext is where the rows ran (the JSON's parameters say).
func finish(commit string, started time.Time, rows []row, ext external) error {
	printTables(os.Stdout, rows)
	targets := checkTargets(rows)
	printTargets(os.Stdout, targets)
	if *chartsDir != "" {
		files, err := writeCharts(*chartsDir, commit, rows)
		if err != nil {
			return err
		}
		fmt.Println("charts:", strings.Join(files, " "))
	}
	if *jsonPath != "" && *reportPath == "" {
		return writeJSON(*jsonPath, commit, started, rows, targets, ext)
	}
	return nil
}

// reportFile prints what a run written by --json measured.
func reportFile() error {
	doc, err := readReport(*reportPath)
	if err != nil {
		return err
	}
	fmt.Printf("bench: the run of %s, at commit %s\n", *reportPath, doc.Commit)
	return finish(doc.Commit, doc.Started, doc.Rows, external{}) // writes no JSON
}

// withoutProcessSuites takes the suites that run the enrich job in
// processes of their own (service_suite.go, fewer_suite.go), not specs of
// the harness, out of the list. fewer has both: its unbounded rows are
// specs and stay in the list.
func withoutProcessSuites(names []string) (rest []string, service, fewer bool) {
	for _, n := range names {
		switch n {
		case "service":
			service = true
		case "fewer":
			fewer = true
			rest = append(rest, n)
		default:
			rest = append(rest, n)
		}
	}
	return rest, service, fewer
}

// Command bench measures the async transform against what a Go user would
// otherwise write, side by side on the same prism and workload, against the
// runner's own cost and against the limit N x L / P.
//
//	go run ./pipelines/bench                    # every suite (about 25 minutes)
//	go run ./pipelines/bench --suites batch     # one suite
//
// Contenders: sync (a plain ParDo), bundle (goroutines inside the bundle, at
// most P at once, flushed in FinishBundle), async (this project's transform,
// with its defaults), floor (the runner's own cost: a bag add and a timer per
// element and a callback that emits the bag, no calls) and python (Beam
// Python's AsyncWrapper, after pipelines/bench/python/setup.sh). Suites:
// batch (bounded input over key shapes), stream (an unbounded source at
// rates and key counts), csweep (callback frequencies), overload (a source
// above capacity), heavytail (one call in a hundred 50 x slower), hotkey
// (one key) and steady (a 30 s source). Each run is a child process, so that
// its CPU time and peak RSS are its own; runs on an unbounded source are
// repeated (--repeat) and reported as the median with min and max. The
// program prints the commit it ran at, a markdown table per suite, and the
// project's targets, each met or missed; --json writes it all as JSON.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

var (
	suitesFlag       = flag.String("suites", strings.Join(suiteNames, ","), "suites to run: "+strings.Join(suiteNames, ", "))
	latency          = flag.Duration("latency", 20*time.Millisecond, "latency L of one call")
	par              = flag.Int("p", 64, "parallelism P of bundle and async")
	freq             = flag.Duration("c", time.Second, "callback frequency C of async (and the floor's timer period)")
	mode             = flag.String("call", "sleep", "the call: sleep, or http (a loopback service with the latency)")
	batchNs          = flag.String("batch_n", "20000,100000", "batch: input sizes")
	batchKeys        = flag.String("batch_keys", "1,100,2000,n", "batch: key counts (n: one key per element)")
	batchContenders  = flag.String("batch_contenders", "floor,bundle,async", "batch: contenders (sync and python are slow: add them by name)")
	streamRates      = flag.String("stream_rates", "0.4,0.6,0.8,0.9", "stream: source rates as shares of P/L")
	streamKeys       = flag.String("stream_keys", "100,1000,10000", "stream: key counts")
	streamContenders = flag.String("stream_contenders", "floor,bundle,async,python", "stream: contenders (python runs at rate 0.8, or the first rate without it, and the first key count only)")
	streamFor        = flag.Duration("stream_for", 5*time.Second, "how long the unbounded source emits")
	overloadFor      = flag.Duration("overload_for", 15*time.Second, "overload: how long the source emits")
	steadyFor        = flag.Duration("steady_for", 30*time.Second, "steady: how long the source emits")
	cSweep           = flag.String("c_sweep", "100ms,250ms,1s", "csweep: callback frequencies")
	repeat           = flag.Int("repeat", 3, "runs of each unbounded-source workload (median, min and max are reported)")
	syncMax          = flag.Duration("sync_max", time.Minute, "skip sync where N x mean L would exceed this")
	pythonTimeout    = flag.Duration("python_timeout", 5*time.Minute, "give up on the python contender after this long")
	jsonPath         = flag.String("json", "", "also write the results as JSON to this file")
	chartsDir        = flag.String("charts", "", "also draw the charts (stream.png, batch.png, csweep.png) into this directory")
	report           = flag.String("report", "", "run nothing: print the tables and targets of a file written by --json (and draw --charts from it)")
	asyncBuffer      = flag.Int("async_buffer", 0, "async WithMaxItemsToBuffer (0: the transform's default)")
	asyncHeld        = flag.Int("async_held", 0, "async WithMaxItemsHeld (0: the transform's default)")
	child            = flag.String("child", "", "internal: run this spec (JSON) and print its result as JSON")
	cpuProfile       = flag.String("cpuprofile", "", "internal: write a CPU profile of the child run here")
)

func main() {
	flag.Parse()
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
	if *report != "" {
		run = reportFile
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func runAll() error {
	specs, err := suites(list(*suitesFlag))
	if err != nil {
		return err
	}
	fmt.Printf("bench: commit %s; L=%v P=%d C=%v call=%s; %d cores, %s %s/%s\n",
		commit(), *latency, *par, *freq, *mode, runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	var rows []row
	for _, s := range specs {
		r := runSpec(s)
		fmt.Printf("   %-9s %-7s %-40s %s\n", s.Suite, s.Contender, s.shape(), r.summary())
		rows = append(rows, r)
	}
	return finish(rows)
}

// finish prints the tables and targets of rows, and writes the JSON and the
// charts asked for.
func finish(rows []row) error {
	printTables(os.Stdout, rows)
	targets := checkTargets(rows)
	printTargets(os.Stdout, targets)
	if *chartsDir != "" {
		files, err := writeCharts(*chartsDir, rows)
		if err != nil {
			return err
		}
		fmt.Println("charts:", strings.Join(files, " "))
	}
	if *jsonPath != "" {
		return writeJSON(*jsonPath, rows, targets)
	}
	return nil
}

// reportFile prints what a run written by --json measured.
func reportFile() error {
	b, err := os.ReadFile(*report)
	if err != nil {
		return err
	}
	var doc struct {
		Commit string `json:"commit"`
		Rows   []row  `json:"rows"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", *report, err)
	}
	fmt.Printf("bench: the run of %s, at commit %s\n", *report, doc.Commit)
	reportCommit = doc.Commit
	return finish(doc.Rows)
}

// runSpec runs one spec (repeatedly on an unbounded source), or says why it
// was skipped.
func runSpec(s spec) row {
	r := row{spec: s}
	if why := skip(s); why != "" {
		r.Note = "skipped: " + why
		return r
	}
	runs := 1
	if !s.Bounded && s.Suite != "steady" {
		runs = max(1, *repeat)
	}
	for i := 0; i < runs; i++ {
		var res result
		var err error
		if s.Contender == "python" {
			res, err = runPython(s)
		} else {
			res, err = spawn(s)
		}
		if err != nil {
			r.Note = "failed: " + err.Error()
			return r
		}
		r.Runs = append(r.Runs, res)
	}
	r.Note = r.Runs[0].Note
	return r
}

// skip says why a spec is not run, or "".
func skip(s spec) string {
	if s.Contender == "sync" {
		if d := time.Duration(s.elements()) * s.meanLatency(); d > *syncMax {
			return fmt.Sprintf("N × mean L = %v, over --sync_max", d.Round(time.Second))
		}
	}
	if s.Contender == "python" && s.Bounded {
		return "AsyncWrapper waits up to 1 s per element once its buffer is full"
	}
	if s.Contender == "python" && s.Suite == "stream" {
		rates := floatList(*streamRates)
		rate := rates[0]
		if slices.Contains(rates, 0.8) {
			rate = 0.8
		}
		if s.Rate != rate || s.Keys != intList(*streamKeys)[0] {
			return fmt.Sprintf("python runs at rate %g and the first key count only", rate)
		}
	}
	return ""
}

// spawn runs one spec in a child process.
func spawn(s spec) (result, error) {
	b, _ := json.Marshal(s)
	args := []string{"--child=" + string(b)}
	if *cpuProfile != "" {
		args = append(args, "--cpuprofile="+*cpuProfile)
	}
	cmd := exec.Command(os.Args[0], args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return result{}, err
	}
	var r result
	if err := json.Unmarshal(lastJSONLine(out.Bytes()), &r); err != nil {
		return result{}, fmt.Errorf("reading its result: %w (output %q)", err, tailString(out.String(), 500))
	}
	return r, nil
}

// reportCommit is the commit of the run a --report file holds.
var reportCommit string

// commit names the code that ran: the git commit, marked dirty when the work
// tree has changes (or the commit of the run --report reads).
func commit() string {
	if reportCommit != "" {
		return reportCommit
	}
	return startCommit()
}

// startCommit is the checkout as the run began: the JSON and the charts,
// written at its end, name that, not what the tree became meanwhile.
var startCommit = sync.OnceValue(func() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "+dirty"
	}
	return c
})

func lastJSONLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.HasPrefix(lines[i], []byte("{")) {
			return lines[i]
		}
	}
	return nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

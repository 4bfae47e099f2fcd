// Command bench measures the async transform against what a Go user would
// otherwise write, side by side on the same prism and workload, and against
// the limit N x L / P.
//
//	go run ./pipelines/bench
//
// Contenders: sync (a plain ParDo), bundle (goroutines inside the bundle, at
// most P at once, flushed in FinishBundle) and async (this project's
// transform). Scenarios: batch (bounded input: prism hands the whole input to
// one bundle) and stream (an unbounded source delivering small bundles at a
// steady rate). Each contender runs in its own child process, so that CPU
// time and peak RSS are its own. Output: a markdown table, and with --json a
// JSON document.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/runner"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

var (
	n             = flag.Int("n", 20000, "elements in the batch scenario")
	keys          = flag.Int("keys", 100, "keys the elements are spread over")
	latency       = flag.Duration("latency", 20*time.Millisecond, "latency of one call")
	par           = flag.Int("p", 64, "parallelism P of bundle and async")
	freq          = flag.Duration("c", time.Second, "callback frequency C of async")
	mode          = flag.String("call", "sleep", "the call: sleep, or http (a loopback service with the latency)")
	scenarios     = flag.String("scenarios", "batch,stream", "scenarios to run")
	contenders    = flag.String("contenders", "sync,bundle,async,python", "contenders to run")
	pyBatch       = flag.Bool("python_batch", false, "also run the python contender on batch input (slow: AsyncWrapper waits up to 1 s per element once its buffer is full)")
	pythonTimeout = flag.Duration("python_timeout", 5*time.Minute, "give up on the python contender after this long")
	streamRate    = flag.Float64("stream_rate", 0.8, "stream input rate as a share of P/L")
	streamFor     = flag.Duration("stream_for", 5*time.Second, "how long the stream source emits")
	syncMax       = flag.Duration("sync_max", time.Minute, "skip sync where N x L would exceed this")
	jsonPath      = flag.String("json", "", "also write the results as JSON to this file")
	memCheck      = flag.Bool("memory_check", false, "also run async on the stream at 10,000 and 100,000 elements and report the peak RSS growth (slow)")
	pngPath       = flag.String("png", "", "also draw throughput and p99 latency per contender into this PNG file")
	child         = flag.String("child", "", "internal: run one scenario/contender and print its result as JSON")
	cpuProfile    = flag.String("cpuprofile", "", "internal: write a CPU profile of the child run here")
	asyncBuffer   = flag.Int("async_buffer", 0, "async WithMaxItemsToBuffer, elements in flight (0: the transform's default, max(2P, 10))")
	asyncHeld     = flag.Int("async_held", -1, "async WithMaxItemsHeld, elements in flight or awaiting commit (-1: N for batch, the transform's default for stream)")
)

// result is one row of the report.
type result struct {
	Scenario     string  `json:"scenario"`
	Contender    string  `json:"contender"`
	Elements     int     `json:"elements"`
	WallS        float64 `json:"wall_s"`
	Throughput   float64 `json:"throughput"`
	RatioToLimit float64 `json:"ratio_to_limit"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	Sustained    float64 `json:"sustained,omitempty"` // stream: outputs/s while the source runs (see figures)
	CPUSPer1k    float64 `json:"cpu_s_per_1k"`
	PeakRSSMB    float64 `json:"peak_rss_mb"`
	Note         string  `json:"note,omitempty"`
}

func main() {
	flag.Parse()
	beam.Init()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if *child != "" {
		res, err := runChild(*child)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	if err := runAll(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func runAll() error {
	limitRate := float64(*par) / latency.Seconds()
	fmt.Printf("bench: n=%d keys=%d L=%v P=%d C=%v call=%s; limit %.0f calls/s; %d cores, %s\n",
		*n, *keys, *latency, *par, *freq, *mode, limitRate, runtime.NumCPU(), runtime.Version())
	var results []result
	for _, sc := range strings.Split(*scenarios, ",") {
		for _, ct := range strings.Split(*contenders, ",") {
			elems := *n
			if sc == "stream" {
				elems = streamElements()
			}
			if ct == "sync" && time.Duration(elems)*(*latency) > *syncMax {
				r := result{Scenario: sc, Contender: ct, Elements: elems, Note: fmt.Sprintf("skipped: N x L = %v exceeds --sync_max", time.Duration(elems)*(*latency))}
				fmt.Println("  ", sc, ct, r.Note)
				results = append(results, r)
				continue
			}
			if ct == "python" {
				if sc == "batch" && !*pyBatch {
					r := result{Scenario: sc, Contender: ct, Elements: elems, Note: "skipped: AsyncWrapper waits up to 1 s per element once its buffer is full (--python_batch runs it)"}
					fmt.Println("  ", sc, ct, r.Note)
					results = append(results, r)
					continue
				}
				r, err := runPython(sc)
				if err != nil {
					r = result{Scenario: sc, Contender: ct, Elements: elems, Note: "skipped: " + err.Error()}
					fmt.Println("  ", sc, ct, r.Note)
					results = append(results, r)
					continue
				}
				fmt.Printf("   %s %s: wall=%.2fs throughput=%.0f/s ratio_to_limit=%.2f\n", sc, ct, r.WallS, r.Throughput, r.RatioToLimit)
				results = append(results, r)
				continue
			}
			r, err := spawn(sc + "/" + ct)
			if err != nil {
				return err
			}
			fmt.Printf("   %s %s: wall=%.2fs throughput=%.0f/s ratio_to_limit=%.2f\n", sc, ct, r.WallS, r.Throughput, r.RatioToLimit)
			results = append(results, r)
		}
	}
	printTable(results)
	targets := checkTargets(results)
	if *memCheck {
		t, err := memoryTarget()
		if err != nil {
			return err
		}
		targets = append(targets, t)
	} else {
		targets = append(targets, target{name: "stream: async peak RSS grows < 20% from N=10,000 to N=100,000", detail: "run with --memory_check"})
	}
	printTargets(targets)
	if *pngPath != "" {
		if err := writeChart(*pngPath, results); err != nil {
			return err
		}
		fmt.Println("chart:", *pngPath)
	}
	if *jsonPath != "" {
		doc := map[string]any{
			"machine": map[string]any{"cores": runtime.NumCPU(), "go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH},
			"params":  map[string]any{"n": *n, "keys": *keys, "latency_ms": latency.Milliseconds(), "p": *par, "c_ms": freq.Milliseconds(), "call": *mode, "stream_elements": streamElements(), "stream_rate_per_s": streamRatePerS()},
			"results": results,
		}
		b, _ := json.MarshalIndent(doc, "", "  ")
		if err := os.WriteFile(*jsonPath, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func streamRatePerS() float64 { return *streamRate * float64(*par) / latency.Seconds() }

// stream emits ticks every 100 ms.
const tickEvery = 100 * time.Millisecond

func streamPerTick() int { return max(1, int(streamRatePerS()*tickEvery.Seconds()+0.5)) }

func streamElements() int { return int(*streamFor/tickEvery) * streamPerTick() }

// spawn runs one scenario/contender in a child process; extra flags override
// the parent's.
func spawn(which string, extra ...string) (result, error) {
	args := append(append([]string{"--child=" + which}, os.Args[1:]...), extra...)
	cmd := exec.Command(os.Args[0], args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s: %w", which, err)
	}
	var r result
	if err := json.Unmarshal(lastLine(out.Bytes()), &r); err != nil {
		return result{}, fmt.Errorf("%s: reading its result: %w (output %q)", which, err, out.String())
	}
	return r, nil
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

// runChild builds and runs one pipeline, and measures it.
func runChild(which string) (result, error) {
	sc, ct, _ := strings.Cut(which, "/")
	c := caller{LatencyUs: latency.Microseconds()}
	if *mode == "http" {
		url, stop, err := startService(*latency)
		if err != nil {
			return result{}, err
		}
		defer stop()
		c.URL = url
	}
	p, s := beam.NewPipelineWithRoot()
	var keyed beam.PCollection
	elems := *n
	switch sc {
	case "batch":
		ints := make([]int, *n)
		for i := range ints {
			ints[i] = i
		}
		keyed = beam.ParDo(s, &keyBy{Keys: *keys}, beam.CreateList(s, ints))
	case "stream":
		elems = streamElements()
		start := time.Now().Add(500 * time.Millisecond).Truncate(tickEvery)
		imp := periodic.Impulse(s, start, start.Add(*streamFor), tickEvery, false)
		keyed = beam.ParDo(s, &ticks{PerTick: streamPerTick(), Keys: *keys, StartUs: start.UnixMicro(), IntervalUs: tickEvery.Microseconds()}, imp)
	default:
		return result{}, fmt.Errorf("unknown scenario %q", sc)
	}
	outputs.samples = make([]sample, 0, elems) // allocated once, not grown while measuring memory
	var out beam.PCollection
	switch ct {
	case "sync":
		out = beam.ParDo(s, &syncFn{Caller: c}, keyed)
	case "bundle":
		out = beam.ParDo(s, &bundleFn{Caller: c, P: *par}, keyed)
	case "async":
		opts := []async.Option{async.WithParallelism(*par), async.WithCallbackFrequency(*freq)}
		if b := *asyncBuffer; b > 0 {
			opts = append(opts, async.WithMaxItemsToBuffer(b))
		}
		if h := *asyncHeld; h > 0 {
			opts = append(opts, async.WithMaxItemsHeld(h))
		} else if h < 0 && sc == "batch" {
			opts = append(opts, async.WithMaxItemsHeld(max(*n, 64**par, *asyncBuffer)))
		}
		out = async.ParDo(s, &syncFn{Caller: c}, keyed, opts...)
	default:
		return result{}, fmt.Errorf("unknown contender %q", ct)
	}
	beam.ParDo0(s, &sink{}, out)

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return result{}, err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	cpu0 := cpuTime()
	began := time.Now()
	if _, err := runner.Run(context.Background(), p); err != nil {
		return result{}, err
	}
	wall := time.Since(began)
	cpu := cpuTime() - cpu0
	outputs.Lock()
	samples := append([]sample(nil), outputs.samples...)
	outputs.Unlock()
	if len(samples) != elems {
		return result{}, fmt.Errorf("%s: %d outputs for %d elements", which, len(samples), elems)
	}
	fig := figures(samples, settle())
	limit := time.Duration(elems) * *latency / time.Duration(*par)
	if ct == "sync" {
		limit = time.Duration(elems) * *latency / time.Duration(*par) // the same limit for everyone
	}
	wallForRate := wall
	if sc == "stream" {
		wallForRate = max(wall, *streamFor) // the source paces the input
	}
	return result{
		Scenario: sc, Contender: ct, Elements: elems, WallS: wall.Seconds(),
		Throughput: float64(elems) / wallForRate.Seconds(), RatioToLimit: limit.Seconds() / wall.Seconds(),
		P50Ms: fig.p50Ms, P99Ms: fig.p99Ms, Sustained: fig.sustained, CPUSPer1k: cpu.Seconds() / float64(elems) * 1000,
		PeakRSSMB: peakRSSMB(),
	}, nil
}

// settle is how long after the source starts the sustained rate begins to
// count: the commit delay a contender may have by design (C plus the jitter
// bound of the commit-delay target).
func settle() time.Duration { return *freq + 500*time.Millisecond }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSSMB() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

func printTable(results []result) {
	w := io.Writer(os.Stdout)
	fmt.Fprintln(w, "\n| scenario | contender | N | wall s | throughput /s | sustained /s | ratio to limit | p50 ms | p99 ms | CPU s / 1k | peak RSS MB | note |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		sustained := ""
		if r.Scenario == "stream" && !strings.HasPrefix(r.Note, "skipped") {
			sustained = fmt.Sprintf("%.0f", r.Sustained)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.2f | %.0f | %s | %.2f | %.1f | %.1f | %.3f | %.0f | %s |\n",
			r.Scenario, r.Contender, r.Elements, r.WallS, r.Throughput, sustained, r.RatioToLimit, r.P50Ms, r.P99Ms, r.CPUSPer1k, r.PeakRSSMB, r.Note)
	}
}

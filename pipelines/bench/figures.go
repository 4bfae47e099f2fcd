package main

import (
	"sort"
	"time"
)

// result is what one run measured. The child fills in what its outputs
// show; the parent adds the CPU time and RSS of the worker (the child, or
// the python process) and of the runner (the prism job server).
type result struct {
	spec
	// WallS runs from the job's submission to its end; StartupS from the
	// submission to the source's first element (at least Lead on an
	// unbounded source).
	WallS    float64 `json:"wall_s"`
	StartupS float64 `json:"startup_s,omitempty"`
	// Throughput is outputs per second: on bounded input over WallS, on an
	// unbounded source from the first element's creation to the last
	// output. RatioToLimit (bounded) is limitSeconds / WallS.
	Throughput   float64 `json:"throughput"`
	RatioToLimit float64 `json:"ratio_to_limit"`
	// Latency runs from an element's creation (on an unbounded source, its
	// tick's scheduled time) to its output reaching the sink.
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
	// Unbounded input: the results of an element that no later element of
	// its key follows in a later bundle wait for the key's backstop, which
	// is what a source that stops shows in its tail. P99BeforeEndMs is the
	// p99 of the elements created before the source's last endWindow (each
	// of those has later elements of its key where keys see several), and
	// LastP50Ms the median latency of each key's last element (the source
	// gives element i to key i % Keys), whose share of the outputs is
	// LastShare (Keys over N, at most 1: 0.078 for 1,000 keys at 2,560/s
	// for 5 s).
	P99BeforeEndMs float64 `json:"p99_before_end_ms,omitempty"`
	LastP50Ms      float64 `json:"last_p50_ms,omitempty"`
	LastShare      float64 `json:"last_share,omitempty"`
	// Sustained (unbounded input) is the output rate while the source runs,
	// from the first creation plus settle to the last creation: the mean
	// rate over windows shifted across that span (sustainedRate). A
	// contender that keeps up, with latencies below settle, shows the
	// source rate.
	Sustained float64 `json:"sustained,omitempty"`
	// Backlog (unbounded input) is how many outputs were not committed when
	// the source stopped, and Drain the rate at which they were committed
	// after (zero without a backlog).
	Backlog int     `json:"backlog,omitempty"`
	Drain   float64 `json:"drain,omitempty"`
	// CPU time (user + system) per 1,000 outputs: CPUSPer1k is the sum of
	// the worker's and the runner's, which are kept apart too. Files
	// written before the split have only the sum, of one process holding
	// both.
	CPUSPer1k       float64 `json:"cpu_s_per_1k"`
	CPUWorkerSPer1k float64 `json:"cpu_worker_s_per_1k"`
	CPURunnerSPer1k float64 `json:"cpu_runner_s_per_1k"`
	// Peak RSS; PeakRSSMB is the worker's, as in files written before the
	// split (when it held the runner too).
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	PeakRSSWorkerMB float64 `json:"peak_rss_worker_mb"`
	PeakRSSRunnerMB float64 `json:"peak_rss_runner_mb"`
	// RunnerShare is the runner's share of the child's CPU time on embedded
	// prism, from its CPU profile (cpusplit.go); zero on a job server.
	RunnerShare float64 `json:"runner_share,omitempty"`
	// CPUSeries samples the CPU time of both processes every 500 ms from
	// the worker's start (SeriesStartUs, Unix microseconds); LastOutputUs
	// is when the last output reached the sink.
	CPUSeries     []cpuPoint `json:"cpu_series,omitempty"`
	SeriesStartUs int64      `json:"series_start_us,omitempty"`
	LastOutputUs  int64      `json:"last_output_us,omitempty"`
	// Quiet CPU (the quiet suite) is CPU seconds per second from 2 s after
	// the last output to the run's end, from CPUSeries; QuietS is how long
	// that was (0: under a second, not measured).
	QuietS             float64 `json:"quiet_s,omitempty"`
	QuietCPUPerS       float64 `json:"quiet_cpu_per_s,omitempty"`
	QuietCPUWorkerPerS float64 `json:"quiet_cpu_worker_per_s,omitempty"`
	QuietCPURunnerPerS float64 `json:"quiet_cpu_runner_per_s,omitempty"`
	// PeakHeld (async) is the most elements the transform's pool held at
	// once: the memory its options bound.
	PeakHeld int `json:"peak_held,omitempty"`
	// Failed marks a run that did not complete, or whose outputs failed the
	// exactly-once check; Note says why.
	Failed bool   `json:"failed,omitempty"`
	Note   string `json:"note,omitempty"`
}

// measured reports whether the run got as far as figures (a run that
// failed the exactly-once check did; one that crashed did not).
func (r result) measured() bool { return r.WallS > 0 }

// settle is how long after the source starts the sustained rate begins to
// count: the commit delay a contender may have by design.
func (s spec) settle() time.Duration { return s.C + 500*time.Millisecond }

// measure turns one run's outputs into its figures.
func measure(s spec, outs []output, wall time.Duration) result {
	r := result{spec: s, WallS: wall.Seconds()}
	r.RatioToLimit = s.limitSeconds() / wall.Seconds()
	r.Throughput = float64(len(outs)) / wall.Seconds()
	if len(outs) == 0 {
		return r
	}
	lat := make([]float64, len(outs))
	first, last := outs[0].createdUs, outs[0].createdUs
	for i, o := range outs {
		lat[i] = float64(o.latencyUs) / 1000
		first, last = min(first, o.createdUs), max(last, o.createdUs)
		r.LastOutputUs = max(r.LastOutputUs, o.committedUs())
	}
	sort.Float64s(lat)
	r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs = pct(lat, 0.50), pct(lat, 0.99), pct(lat, 0.999), lat[len(lat)-1]
	if s.Bounded {
		return r
	}
	r.P99BeforeEndMs, r.LastP50Ms, r.LastShare = splitAtEnd(s.Keys, outs)
	if r.LastOutputUs > first {
		r.Throughput = float64(len(outs)) / (float64(r.LastOutputUs-first) / 1e6)
	}
	from, to := first+s.settle().Microseconds(), last
	committed := make([]int64, len(outs))
	for i, o := range outs {
		committed[i] = o.committedUs()
		if committed[i] > to {
			r.Backlog++
		}
	}
	r.Sustained = sustainedRate(committed, from, to)
	if r.Backlog > 0 && r.LastOutputUs > to {
		r.Drain = float64(r.Backlog) / (float64(r.LastOutputUs-to) / 1e6)
	}
	return r
}

// sustainEdge is how far sustainedRate shifts its window: two commit rounds
// of a contender that commits four times a second, so that a round falling
// just inside or just outside an edge moves the figure by a fraction of a
// round instead of a whole one (a whole round is 7 per cent of a 3.5 s
// window; runs that kept up read 0.93 to 1.05 of the source rate counted
// over one fixed window).
const sustainEdge = 500 * time.Millisecond

// sustainedRate is outputs committed per second within [from, to]
// (microseconds), averaged over every window of length to-from-sustainEdge
// that fits in it: each commit counts with the share of those windows that
// hold it, which ramps from 0 to 1 over sustainEdge at each end. Outputs
// committed at a steady rate read that rate, and so do rounds whose period
// divides sustainEdge (four a second, say), at any phase, in a span of a
// second or more.
func sustainedRate(committed []int64, from, to int64) float64 {
	edge := min(sustainEdge.Microseconds(), (to-from)/2)
	span := to - from - edge
	if span <= 0 {
		return 0
	}
	share := func(x int64) float64 {
		if edge == 0 {
			return 1
		}
		return min(1, max(0, float64(x)/float64(edge)))
	}
	var in float64
	for _, c := range committed {
		if c >= from && c <= to {
			in += share(c-from) * share(to-c)
		}
	}
	return in / (float64(span) / 1e6)
}

func pct(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// endWindow is how long before the source's last element an element must
// be created to count in result.P99BeforeEndMs: the furthest ahead a busy
// key's backstop is set at the default callback frequency (2 s),
// and more than the gap between a key's elements in the stream suite over
// 100 and 1,000 keys (over 10,000 keys most keys see one element or two).
const endWindow = 2 * time.Second

// splitAtEnd splits an unbounded run's latencies at the source's end (see
// result.P99BeforeEndMs): the p99 of the elements created before its last
// endWindow, the median of each key's last element, and the last ones'
// share of the outputs.
func splitAtEnd(keys int, outs []output) (beforeEndP99, lastP50, lastShare float64) {
	n, lastCreated := 0, int64(0)
	for _, o := range outs {
		n, lastCreated = max(n, int(o.index)+1), max(lastCreated, o.createdUs)
	}
	var before, last []float64
	for _, o := range outs {
		ms := float64(o.latencyUs) / 1000
		if o.createdUs < lastCreated-endWindow.Microseconds() {
			before = append(before, ms)
		}
		if int(o.index) >= n-keys {
			last = append(last, ms)
		}
	}
	sort.Float64s(before)
	sort.Float64s(last)
	if len(outs) > 0 {
		lastShare = float64(len(last)) / float64(len(outs))
	}
	return pct(before, 0.99), pct(last, 0.50), lastShare
}

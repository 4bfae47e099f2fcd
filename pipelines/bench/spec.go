package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// spec is one measured workload: one contender on one pipeline, run in a
// worker process of its own, on prism embedded in it, on a prism job server
// of its own, so that the CPU time and peak RSS are the run's own, or on a
// job server the bench did not start (Endpoint).
type spec struct {
	Suite     string `json:"suite"`     // the table the row belongs to
	Contender string `json:"contender"` // async, bundle, eager, passthrough, timeronly, python, sync
	// Label is said after the workload in the table, for a row that is not
	// one of a sweep's (the sync row, the extra sliding-window row).
	Label   string `json:"label,omitempty"`
	Bounded bool   `json:"bounded"` // batch input (else an unbounded source)
	N       int    `json:"n"`       // elements of bounded input
	Keys    int    `json:"keys"`    // keys the elements are spread over
	// Rate is the unbounded source's rate as a share of P/L, and For how
	// long it emits; for Idle after that it keeps ticking without elements.
	Rate float64       `json:"rate,omitempty"`
	For  time.Duration `json:"for_ns,omitempty"`
	Idle time.Duration `json:"idle_ns,omitempty"`
	// Lead is how long after pipeline construction the unbounded source
	// starts: the time a job needs to come up, the same for every contender.
	Lead time.Duration `json:"lead_ns,omitempty"`
	// Latency L, parallelism P and callback frequency C.
	Latency time.Duration `json:"latency_ns"`
	P       int           `json:"p"`
	C       time.Duration `json:"c_ns"`
	// The element with index i is slow when i % SlowEvery is in SlowAt: its
	// call takes SlowX × L. Files written before SlowAt existed had one slow
	// element in SlowEvery, at SlowEvery/2.
	SlowEvery int     `json:"slow_every,omitempty"`
	SlowAt    []int   `json:"slow_at,omitempty"`
	SlowX     float64 `json:"slow_x,omitempty"`
	Call      string  `json:"call"` // sleep, or http (a loopback service)
	// Window is the windowing applied after the source: "" (the global
	// window), fixed:D, sliding:SIZE/PERIOD or sessions:GAP. Bounded input
	// has event times spread over Windows minutes (element i at minute
	// i % Windows); unbounded input has its tick's time. Sliding is read
	// from files written before Window existed (sliding windows of a minute
	// every minute; Windows alone meant fixed windows of a minute).
	Window  string `json:"window,omitempty"`
	Windows int    `json:"windows,omitempty"`
	Sliding bool   `json:"sliding,omitempty"`
	// JobServer runs the spec on a prism job server of its own, in a
	// process apart from the worker's (python always does, but at an
	// Endpoint); else, without an Endpoint, on prism embedded in the
	// worker's process.
	JobServer bool `json:"job_server,omitempty"`
	// Endpoint, when set, is a job server the bench did not start, which
	// the run submits to with the runner named Runner (--endpoint and
	// --runner): its process is not the bench's, so the runner's CPU time
	// and memory are not measured.
	Endpoint string `json:"endpoint,omitempty"`
	Runner   string `json:"runner,omitempty"`
	// AsyncBuffer and AsyncHeld override the transform's defaults (0: keep).
	AsyncBuffer int `json:"async_buffer,omitempty"`
	AsyncHeld   int `json:"async_held,omitempty"`
	// Batch > 0 runs async as a BatchParDo of up to Batch elements a request
	// against a batch endpoint whose call takes L + ItemCost per element of
	// the request (the fewer suite); the limit is then P × Batch / (L +
	// Batch × ItemCost). Other contenders ignore it: for them it only names
	// the rate the row shares.
	Batch    int           `json:"batch,omitempty"`
	ItemCost time.Duration `json:"item_cost_ns,omitempty"`
}

// embedded reports whether prism runs in the worker's process.
func (s spec) embedded() bool { return !s.JobServer && s.Endpoint == "" }

// runnerMeasured reports whether the runner's CPU time and memory are
// measured: everywhere but on a job server the bench did not start.
func (s spec) runnerMeasured() bool { return s.Endpoint == "" }

// held is async's WithMaxItemsHeld for the run: the flag, or the
// transform's default, max(64 P, buffer), with batches max(64 P × Batch,
// buffer).
func (s spec) held() int {
	if s.AsyncHeld > 0 {
		return s.AsyncHeld
	}
	inFlight := s.P * max(1, s.Batch)
	buffer := s.AsyncBuffer
	if buffer == 0 {
		buffer = max(2*inFlight, 10)
	}
	return max(64*inFlight, buffer)
}

// slowCount is how many elements in SlowEvery are slow.
func (s spec) slowCount() int {
	switch {
	case s.SlowEvery <= 0:
		return 0
	case len(s.SlowAt) == 0:
		return 1 // files written before SlowAt: one, at SlowEvery/2
	}
	return len(s.SlowAt)
}

// meanLatency is the mean call latency of the workload.
func (s spec) meanLatency() time.Duration {
	if s.slowCount() == 0 {
		return s.Latency
	}
	slow := time.Duration(float64(s.Latency) * s.SlowX)
	return s.Latency + (slow-s.Latency)*time.Duration(s.slowCount())/time.Duration(s.SlowEvery)
}

// limitRate is P / mean latency: the most calls per second any contender
// can make. With batches it is the most elements a second: P requests of
// Batch elements each, each request taking L + Batch × ItemCost.
func (s spec) limitRate() float64 {
	if s.Batch > 0 {
		return float64(s.P*s.Batch) / (s.Latency + time.Duration(s.Batch)*s.ItemCost).Seconds()
	}
	return float64(s.P) / s.meanLatency().Seconds()
}

// ratePerS is the source rate, elements per second.
func (s spec) ratePerS() float64 { return s.Rate * float64(s.P) / s.Latency.Seconds() }

// tick is how often the unbounded source emits a batch of elements.
const tick = 100 * time.Millisecond

func (s spec) perTick() int { return max(1, int(s.ratePerS()*tick.Seconds()+0.5)) }

// elements is how many elements the run has.
func (s spec) elements() int {
	if s.Bounded {
		return s.N
	}
	return int(s.For/tick) * s.perTick()
}

// outputs is how many outputs the sink must see: one per element and
// window (Beam calls a DoFn once per window of an element).
func (s spec) outputs() int { return s.elements() * s.window().perElement() }

// limitSeconds is the least time any contender needs: one call per element
// and window, outputs × mean L / P.
func (s spec) limitSeconds() float64 { return float64(s.outputs()) / s.limitRate() }

// window is the spec's windowing, read from Window or from the fields of
// older files.
func (s spec) window() windowKind {
	if s.Window != "" {
		w, err := parseWindow(s.Window)
		if err == nil {
			return w
		}
	}
	switch {
	case s.Windows > 0 && s.Sliding:
		return windowKind{Kind: "sliding", Size: time.Minute, Period: time.Minute}
	case s.Windows > 0:
		return windowKind{Kind: "fixed", Size: time.Minute}
	}
	return windowKind{Kind: "global"}
}

// shape names the workload in a table.
func (s spec) shape() string {
	var b strings.Builder
	if s.Bounded {
		fmt.Fprintf(&b, "N=%d keys=%s", s.N, keysText(s.Keys, s.N))
	} else if s.Batch > 0 {
		fmt.Fprintf(&b, "%.2g×limit keys=%d for=%v batches of %d (L + %v per element)", s.ratePerS()/s.limitRate(), s.Keys, s.For, s.Batch, s.ItemCost)
	} else {
		fmt.Fprintf(&b, "%.2g×P/L keys=%d for=%v", s.Rate, s.Keys, s.For)
		if s.Idle > 0 {
			fmt.Fprintf(&b, " then idle %v", s.Idle)
		}
	}
	if w := s.window(); w.Kind != "global" {
		fmt.Fprintf(&b, " in %s", w)
		if s.Bounded && s.Windows > 0 {
			fmt.Fprintf(&b, " over %d min", s.Windows)
		}
	}
	if s.C != time.Second {
		fmt.Fprintf(&b, " C=%v", s.C)
	}
	switch {
	case s.JobServer && s.Suite == "robust":
		fmt.Fprintf(&b, " jobserver P=%d", s.P)
	case s.Endpoint != "" && s.Suite == "robust":
		fmt.Fprintf(&b, " P=%d", s.P)
	}
	if n := s.slowCount(); n > 0 {
		fmt.Fprintf(&b, " %d/%d calls %g×L", n, s.SlowEvery, s.SlowX)
	}
	if s.Label != "" {
		fmt.Fprintf(&b, " (%s)", s.Label)
	}
	if s.Endpoint != "" {
		fmt.Fprintf(&b, " on %s", external{s.Endpoint, s.Runner}.label())
	}
	return b.String()
}

func keysText(keys, n int) string {
	if keys == n {
		return strconv.Itoa(keys) + " (one per element)"
	}
	return strconv.Itoa(keys)
}

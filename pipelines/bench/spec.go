package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// spec is one measured run: one contender on one workload, in a child
// process of its own so that its CPU time and peak RSS are its own.
type spec struct {
	Suite     string `json:"suite"`     // the table the row belongs to
	Contender string `json:"contender"` // sync, bundle, async, floor, python
	Bounded   bool   `json:"bounded"`   // batch input (else an unbounded source)
	N         int    `json:"n"`         // elements of bounded input
	Keys      int    `json:"keys"`      // keys the elements are spread over
	// Rate is the unbounded source's rate as a share of P/L, and For how
	// long it emits.
	Rate float64       `json:"rate,omitempty"`
	For  time.Duration `json:"for_ns,omitempty"`
	// Latency L, parallelism P and callback frequency C.
	Latency time.Duration `json:"latency_ns"`
	P       int           `json:"p"`
	C       time.Duration `json:"c_ns"`
	// Every SlowEvery-th element's call takes SlowX × L (0: none).
	SlowEvery int     `json:"slow_every,omitempty"`
	SlowX     float64 `json:"slow_x,omitempty"`
	Call      string  `json:"call"` // sleep, or http (a loopback service)
	// Windows spreads bounded input's event times over that many minutes,
	// in fixed windows of one minute (0: the global window); Sliding makes
	// them sliding windows of one minute every minute (one window per
	// element still, but the transform's sliding-window path).
	Windows int  `json:"windows,omitempty"`
	Sliding bool `json:"sliding,omitempty"`
	// AsyncBuffer and AsyncHeld override the transform's defaults (0: keep).
	AsyncBuffer int `json:"async_buffer,omitempty"`
	AsyncHeld   int `json:"async_held,omitempty"`
}

// held is async's WithMaxItemsHeld for the run: the flag, or the
// transform's default, max(64 P, buffer).
func (s spec) held() int {
	if s.AsyncHeld > 0 {
		return s.AsyncHeld
	}
	buffer := s.AsyncBuffer
	if buffer == 0 {
		buffer = max(2*s.P, 10)
	}
	return max(64*s.P, buffer)
}

// meanLatency is the mean call latency of the workload.
func (s spec) meanLatency() time.Duration {
	if s.SlowEvery <= 0 {
		return s.Latency
	}
	slow := time.Duration(float64(s.Latency) * s.SlowX)
	return s.Latency + (slow-s.Latency)/time.Duration(s.SlowEvery)
}

// limitRate is P / mean latency: the most calls per second any contender
// can make.
func (s spec) limitRate() float64 { return float64(s.P) / s.meanLatency().Seconds() }

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

// limitSeconds is the least time any contender needs: N x mean L / P.
func (s spec) limitSeconds() float64 { return float64(s.elements()) / s.limitRate() }

// shape names the workload in a table.
func (s spec) shape() string {
	var b strings.Builder
	if s.Bounded {
		fmt.Fprintf(&b, "N=%d keys=%s", s.N, keysText(s.Keys, s.N))
	} else {
		fmt.Fprintf(&b, "%.1f×P/L keys=%d for=%v", s.Rate, s.Keys, s.For)
	}
	if s.Windows > 0 && s.Sliding {
		fmt.Fprintf(&b, " in %d sliding windows", s.Windows)
	} else if s.Windows > 0 {
		fmt.Fprintf(&b, " in %d windows", s.Windows)
	}
	if s.C != time.Second {
		fmt.Fprintf(&b, " C=%v", s.C)
	}
	if s.SlowEvery > 0 {
		fmt.Fprintf(&b, " 1/%d calls %g×L", s.SlowEvery, s.SlowX)
	}
	return b.String()
}

func keysText(keys, n int) string {
	if keys == n {
		return strconv.Itoa(keys) + " (one per element)"
	}
	return strconv.Itoa(keys)
}

// base is the workload every suite starts from, from the flags.
func base() spec {
	return spec{Latency: *latency, P: *par, C: *freq, Call: *mode, For: *streamFor, AsyncBuffer: *asyncBuffer, AsyncHeld: *asyncHeld}
}

// suites lists the runs of each suite named in --suites, in order.
func suites(names []string) ([]spec, error) {
	var out []spec
	for _, name := range names {
		add, ok := suiteSpecs[name]
		if !ok {
			return nil, fmt.Errorf("unknown suite %q (have %s)", name, strings.Join(suiteNames, ", "))
		}
		for _, s := range add() {
			s.Suite = name
			out = append(out, s)
		}
	}
	return out, nil
}

var suiteNames = []string{"batch", "windowed", "stream", "csweep", "overload", "heavytail", "hotkey", "steady"}

// suiteSpecs builds each suite's runs from the flags.
var suiteSpecs = map[string]func() []spec{
	// Bounded input at every key shape: one key, a few, many, one per element.
	"batch": func() []spec {
		var out []spec
		for _, n := range intList(*batchNs) {
			for _, keys := range keyShapes(*batchKeys, n) {
				for _, c := range list(*batchContenders) {
					s := base()
					s.Bounded, s.N, s.Keys, s.Contender = true, n, keys, c
					out = append(out, s)
				}
			}
		}
		return out
	},
	// Bounded input in fixed windows (the bundle path, through the global
	// window), and at 100 keys in sliding windows (the drain path; at one
	// element per key it runs about one call at a time, minutes).
	"windowed": func() []spec {
		var out []spec
		n := intList(*batchNs)[0]
		for _, keys := range keyShapes("100,n", n) {
			for _, c := range []string{"bundle", "async"} {
				s := base()
				s.Bounded, s.N, s.Keys, s.Windows, s.Contender = true, n, keys, 10, c
				out = append(out, s)
			}
		}
		s := base()
		s.Bounded, s.N, s.Keys, s.Windows, s.Sliding, s.Contender = true, n, 100, 10, true, "async"
		return append(out, s)
	},
	// An unbounded source at rates below capacity, over few and many keys.
	"stream": func() []spec {
		var out []spec
		for _, rate := range floatList(*streamRates) {
			for _, keys := range intList(*streamKeys) {
				for _, c := range list(*streamContenders) {
					s := base()
					s.Rate, s.Keys, s.Contender = rate, keys, c
					out = append(out, s)
				}
			}
		}
		return out
	},
	// The callback frequency a user lowers for latency, at 0.8 x P/L.
	"csweep": func() []spec {
		var out []spec
		for _, c := range durationList(*cSweep) {
			for _, ct := range []string{"floor", "async"} {
				s := base()
				s.Rate, s.Keys, s.C, s.Contender = 0.8, 100, c, ct
				out = append(out, s)
			}
		}
		return out
	},
	// A source above capacity, long enough to fill WithMaxItemsHeld.
	"overload": func() []spec {
		var out []spec
		for _, c := range []string{"floor", "bundle", "async"} {
			s := base()
			s.Rate, s.Keys, s.For, s.Contender = 1.2, 100, *overloadFor, c
			out = append(out, s)
		}
		return out
	},
	// One call in a hundred takes 50 x L: what an async wrapper is for.
	"heavytail": func() []spec {
		var out []spec
		for _, c := range []string{"sync", "bundle", "async", "python"} {
			s := base()
			s.Keys, s.SlowEvery, s.SlowX, s.Contender = 100, 100, 50, c
			s.Rate = 0.9 * s.limitRate() / (float64(s.P) / s.Latency.Seconds()) // 0.9 x P / mean L
			out = append(out, s)
		}
		return out
	},
	// Every element on one key.
	"hotkey": func() []spec {
		var out []spec
		for _, c := range []string{"floor", "bundle", "async"} {
			s := base()
			s.Rate, s.Keys, s.Contender = 0.8, 1, c
			out = append(out, s)
		}
		return out
	},
	// A longer source, to show a steady state rather than a burst.
	"steady": func() []spec {
		s := base()
		s.Rate, s.Keys, s.For, s.Contender = 0.8, 100, *steadyFor, "async"
		return []spec{s}
	},
}

// keyShapes reads the batch key shapes: numbers, or "n" for one key per
// element.
func keyShapes(flagValue string, n int) []int {
	var out []int
	for _, k := range list(flagValue) {
		if k == "n" {
			out = append(out, n)
			continue
		}
		if v, err := strconv.Atoi(k); err == nil && v > 0 {
			out = append(out, v)
		}
	}
	return out
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func intList(s string) []int {
	var out []int
	for _, f := range list(s) {
		if v, err := strconv.Atoi(f); err == nil {
			out = append(out, v)
		}
	}
	return out
}

func floatList(s string) []float64 {
	var out []float64
	for _, f := range list(s) {
		if v, err := strconv.ParseFloat(f, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

func durationList(s string) []time.Duration {
	var out []time.Duration
	for _, f := range list(s) {
		if v, err := time.ParseDuration(f); err == nil {
			out = append(out, v)
		}
	}
	return out
}

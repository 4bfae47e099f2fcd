package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The contenders. Every one is measured in the same pipeline shape (see
// pipeline.go); what each is, is said in contenders.go.
var (
	// callers are the contenders the batch and sweep suites may list.
	callers = []string{"async", "async-drain", "bundle", "eager", "passthrough", "timeronly"}
)

// globalOnly says why bundle and eager are not run in windows other than
// the global one.
const globalOnly = "FinishBundle outputs land in the global window in Beam Go"

// base is the workload every suite starts from, from the flags, on the job
// server r when it is set.
func base(r external) spec {
	return spec{Latency: *latency, P: *par, C: *freq, Call: *mode, For: *streamFor, Lead: *lead,
		AsyncBuffer: *asyncBuffer, AsyncHeld: *asyncHeld, JobServer: *prismMode == "jobserver" && r.Endpoint == "",
		Endpoint: r.Endpoint, Runner: r.Runner}
}

// onJobServer runs s on a prism job server of its own, unless it runs on a
// job server the bench did not start.
func onJobServer(s spec) spec {
	s.JobServer = s.Endpoint == ""
	return s
}

// heavyTail makes 2% of elements slow, by construction: those with
// i % 100 in {25, 75}, at 50 × L each.
func heavyTail(s spec) spec {
	s.SlowEvery, s.SlowAt, s.SlowX = 100, []int{25, 75}, 50
	return s
}

// suites lists the runs of each suite named in --suites, in order, on the
// job server r when it is set.
func suites(names []string, r external) ([]spec, error) {
	if *prismMode != "embedded" && *prismMode != "jobserver" {
		return nil, fmt.Errorf("--prism=%q: want embedded or jobserver", *prismMode)
	}
	var out []spec
	for _, name := range names {
		add, ok := suiteSpecs[name]
		if !ok {
			return nil, fmt.Errorf("unknown suite %q (have %s)", name, strings.Join(suiteNames, ", "))
		}
		specs, err := add(r)
		if err != nil {
			return nil, fmt.Errorf("suite %s: %w", name, err)
		}
		for _, s := range specs {
			s.Suite = name
			out = append(out, s)
		}
	}
	return out, nil
}

var suiteNames = []string{"batch", "windowed", "stream", "windows", "python", "csweep", "overload", "heavytail", "hotkey", "steady", "sparse", "quiet", "robust"}

// suiteSpecs builds each suite's runs from the flags.
var suiteSpecs = map[string]func(r external) ([]spec, error){
	// Bounded input at every key shape: one key, a few, many, one per
	// element; and sync, the plain ParDo, once (it makes one call at a time).
	"batch": func(r external) ([]spec, error) {
		cs, err := contenders(*batchContenders, callers)
		if err != nil {
			return nil, err
		}
		var out []spec
		for _, n := range intList(*batchNs) {
			for _, keys := range keyShapes(*batchKeys, n) {
				for _, c := range cs {
					s := base(r)
					s.Bounded, s.N, s.Keys, s.Contender = true, n, keys, c
					out = append(out, s)
				}
			}
		}
		if *batchSync {
			s := base(r)
			s.Bounded, s.N, s.Keys, s.Contender = true, 1000, 100, "sync"
			s.Label = "sync: one call at a time, N × L ≈ " + (time.Duration(s.N) * s.Latency).Round(time.Second).String()
			out = append(out, s)
		}
		return out, nil
	},
	// Bounded input with event times over ten minutes: fixed windows of a
	// minute at 100 keys and one key per element, sliding windows of a
	// minute every minute (one window per element, but the sliding-window
	// path) at both, and one extra row with two windows per element.
	"windowed": func(r external) ([]spec, error) {
		n := intList(*batchNs)[0]
		var out []spec
		for _, w := range []string{"fixed:1m0s", "sliding:1m0s/1m0s"} {
			for _, keys := range keyShapes("100,n", n) {
				for _, c := range []string{"passthrough", "timeronly", "bundle", "eager", "async"} {
					s := base(r)
					s.Bounded, s.N, s.Keys, s.Windows, s.Window, s.Contender = true, n, keys, 10, w, c
					out = append(out, s)
				}
			}
		}
		s := base(r)
		s.Bounded, s.N, s.Keys, s.Windows, s.Window, s.Contender = true, n, 100, 10, "sliding:2m0s/1m0s", "async"
		s.Label = "extra: two windows per element, the limit counts 2N calls"
		return append(out, s), nil
	},
	// An unbounded source at rates below capacity, over few and many keys,
	// in each of --stream_windows.
	"stream": func(r external) ([]spec, error) {
		cs, err := contenders(*streamContenders, callers)
		if err != nil {
			return nil, err
		}
		ws, err := windowList(*streamWindows)
		if err != nil {
			return nil, err
		}
		var out []spec
		for _, w := range ws {
			for _, rate := range floatList(*streamRates) {
				for _, keys := range intList(*streamKeys) {
					for _, c := range cs {
						s := base(r)
						s.Rate, s.Keys, s.Window, s.Contender = rate, keys, w.flag(), c
						out = append(out, s)
					}
				}
			}
		}
		return out, nil
	},
	// Windowed unbounded input at 0.8 × P/L, per kind of --window_kinds.
	"windows": func(r external) ([]spec, error) {
		ws, err := windowList(*windowKinds)
		if err != nil {
			return nil, err
		}
		var out []spec
		for _, w := range ws {
			for _, keys := range []int{100, 1000, 10000} {
				for _, c := range []string{"passthrough", "timeronly", "async"} {
					s := base(r)
					s.Rate, s.Keys, s.Window, s.Contender = 0.8, keys, w.flag(), c
					out = append(out, s)
				}
			}
		}
		return out, nil
	},
	// The space users live in (issue 35): both prism modes, embedded at
	// P = 64 and the job server at P = 16 (there each state request is a
	// round trip between processes, and at P = 64 the two cores, not the
	// transform, would set the limit), each callback frequency, key count
	// and rate of the --robust_* flags, the source running at least 3 C;
	// run only when named (about 12 s a run at C ≤ 1 s). With --endpoint,
	// once, on the job server there at --robust_jobserver_p.
	"robust": func(r external) ([]spec, error) {
		cts, err := contenders(*robustContenders, append(slices.Clone(callers), "roundtimer"))
		if err != nil {
			return nil, err
		}
		modes := list(*robustModes)
		for _, mode := range modes {
			if mode != "embedded" && mode != "jobserver" {
				return nil, fmt.Errorf("--robust_modes: %q is not embedded or jobserver", mode)
			}
		}
		if r.Endpoint != "" {
			modes = []string{"endpoint"}
		}
		var out []spec
		for _, mode := range modes {
			for _, c := range durationList(*robustC) {
				for _, keys := range intList(*robustKeys) {
					for _, rate := range floatList(*robustRates) {
						for _, ct := range cts {
							s := base(r)
							s.Rate, s.Keys, s.C, s.Contender = rate, keys, c, ct
							// Sustained is measured from C + 0.5 s on: the
							// source must run well past it.
							s.For = max(s.For, 3*c)
							s.JobServer, s.P = mode == "jobserver", *robustP
							if !s.embedded() {
								s.P = *robustJobServerP
							}
							out = append(out, s)
						}
					}
				}
			}
		}
		return out, nil
	},
	// The callback frequency a user lowers for latency, at 0.8 × P/L.
	"csweep": func(r external) ([]spec, error) {
		var out []spec
		for _, c := range durationList(*cSweep) {
			for _, ct := range []string{"timeronly", "async"} {
				s := base(r)
				s.Rate, s.Keys, s.C, s.Contender = 0.8, 100, c, ct
				out = append(out, s)
			}
		}
		return out, nil
	},
	// A source above capacity, long enough to fill WithMaxItemsHeld.
	"overload": func(r external) ([]spec, error) {
		var out []spec
		for _, c := range []string{"passthrough", "timeronly", "bundle", "eager", "async"} {
			s := base(r)
			s.Rate, s.Keys, s.For, s.Contender = 1.2, 100, *overloadFor, c
			out = append(out, s)
		}
		return out, nil
	},
	// 2% of calls take 50 × L: what an async wrapper is for. The source runs
	// at 0.9 × P / mean L.
	"heavytail": func(r external) ([]spec, error) {
		var out []spec
		for _, c := range []string{"passthrough", "bundle", "eager", "async"} {
			s := heavyTail(base(r))
			s.Keys, s.Contender = 100, c
			s.Rate = 0.9 * s.limitRate() / (float64(s.P) / s.Latency.Seconds())
			out = append(out, s)
		}
		return out, nil
	},
	// Beam Python's AsyncWrapper beside async, both on a prism job server
	// (Python has no embedded prism) or both at --endpoint, same flags and
	// lead: at 0.8 × P/L over the stream suite's key counts, and the heavy
	// tail.
	"python": func(r external) ([]spec, error) {
		var out []spec
		for _, keys := range intList(*streamKeys) {
			for _, c := range []string{"async", "python"} {
				s := onJobServer(base(r))
				s.Rate, s.Keys, s.Contender = 0.8, keys, c
				out = append(out, s)
			}
		}
		for _, c := range []string{"async", "python"} {
			s := onJobServer(heavyTail(base(r)))
			s.Keys, s.Contender = 100, c
			s.Rate = 0.9 * s.limitRate() / (float64(s.P) / s.Latency.Seconds())
			out = append(out, s)
		}
		return out, nil
	},
	// Every element on one key.
	"hotkey": func(r external) ([]spec, error) {
		var out []spec
		for _, c := range []string{"passthrough", "timeronly", "bundle", "eager", "async"} {
			s := base(r)
			s.Rate, s.Keys, s.Contender = 0.8, 1, c
			out = append(out, s)
		}
		return out, nil
	},
	// A longer source, to show a steady state rather than a burst.
	"steady": func(r external) ([]spec, error) {
		s := base(r)
		s.Rate, s.Keys, s.For, s.Contender = 0.8, 100, *steadyFor, "async"
		return []spec{s}, nil
	},
	// Few elements over many keys: each key sees one about every minute.
	"sparse": func(r external) ([]spec, error) {
		var out []spec
		for _, c := range []string{"passthrough", "timeronly", "bundle", "eager", "async"} {
			s := base(r)
			s.Rate, s.Keys, s.For, s.Contender = 0.05, 10000, *sparseFor, c
			out = append(out, s)
		}
		return out, nil
	},
	// The fewer-calls suite's unbounded half (issue 22; its bounded half is
	// fewer_suite.go): against the loopback service (L a request plus
	// 0.2 ms per element of a batch), a source at 0.8 of each one's limit
	// over 1,000 keys: one element a call (P / L), and BatchParDo with
	// batches of --fewer_batches (P × n / (L + n × 0.2 ms)), beside
	// passthrough and timeronly at the same rates. At --fewer_p (2: the
	// source rates, up to 5,333/s, stay within what prism's stateful stage
	// moves on two cores), and in extra rows at the bounded half's
	// parallelism 8 with batches of --fewer_extra (whose rates may pass
	// it). The rows call the loopback service over HTTP with L = 20 ms,
	// whatever --call, --latency and --p say. Run only when named (--suites
	// fewer).
	"fewer": func(r external) ([]spec, error) {
		var out []spec
		add := func(p, batch int, label string) {
			for _, c := range []string{"passthrough", "timeronly", "async"} {
				s := base(r)
				s.P, s.Latency, s.Call, s.Keys, s.Contender, s.Label = p, fewerLatency, "http", 1000, c, label
				if batch > 1 {
					s.Batch, s.ItemCost = batch, fewerItemCost
				}
				s.Rate = 0.8 * s.limitRate() / (float64(s.P) / s.Latency.Seconds())
				out = append(out, s)
			}
		}
		for _, batch := range intList(*fewerBatches) {
			label := fmt.Sprintf("P=%d", *fewerP)
			if batch <= 1 {
				label += ", one element a call"
			}
			add(*fewerP, batch, label)
		}
		for _, batch := range intList(*fewerExtra) {
			if *fewerP == fewerParallelism && slices.Contains(intList(*fewerBatches), batch) {
				continue // a row of the sweep already
			}
			add(fewerParallelism, batch, fmt.Sprintf("extra: P=%d, the bounded half's", fewerParallelism))
		}
		return out, nil
	},
	// A burst, then a source that keeps ticking without elements: what a
	// contender costs while there is nothing to do.
	"quiet": func(r external) ([]spec, error) {
		var out []spec
		for _, c := range []string{"passthrough", "timeronly", "async"} {
			s := base(r)
			s.Rate, s.Keys, s.Idle, s.Contender = 0.8, 1000, *quietIdle, c
			out = append(out, s)
		}
		return out, nil
	},
}

// contenders reads a --*_contenders flag, refusing names the suite does not
// run.
func contenders(flagValue string, allowed []string) ([]string, error) {
	var out []string
	for _, c := range list(flagValue) {
		switch {
		case c == "floor":
			return nil, fmt.Errorf("contender floor is now called timeronly (and passthrough is the floor)")
		case c == "sync":
			return nil, fmt.Errorf("sync runs in one row of the batch suite only (--batch_sync)")
		case !slices.Contains(allowed, c):
			return nil, fmt.Errorf("unknown contender %q (have %s)", c, strings.Join(allowed, ", "))
		}
		out = append(out, c)
	}
	return out, nil
}

// runsOf is how many times a spec runs: repeatedly on an unbounded source,
// except the long steady one.
func runsOf(s spec) int {
	if s.Bounded || s.Suite == "steady" {
		return 1
	}
	return max(1, *repeat)
}

// skip says why a spec is not run, or "".
func skip(s spec) string {
	if (s.Contender == "bundle" || s.Contender == "eager") && s.window().Kind != "global" {
		return globalOnly
	}
	if s.Contender != "python" {
		return ""
	}
	if s.window().Kind != "global" {
		return "python runs in the global window only"
	}
	if _, err := pythonBin(); err != nil {
		return err.Error()
	}
	return ""
}

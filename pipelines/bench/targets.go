package main

import (
	"fmt"
	"io"
	"time"
)

// target is one of the project's speed targets, judged on a run.
type target struct {
	name   string
	met    bool
	judged bool // false when the run lacks the rows to judge it
	detail string
}

func (t target) verdict() string {
	switch {
	case !t.judged:
		return "not judged"
	case t.met:
		return "met"
	}
	return "MISSED"
}

// find returns the row of a suite, contender and workload, if it ran.
func find(rows []row, suite, contender string, match func(spec) bool) (row, bool) {
	for _, r := range rows {
		if r.Suite == suite && r.Contender == contender && r.ran() && match(r.spec) {
			return r, true
		}
	}
	return row{}, false
}

func same(s spec) func(spec) bool {
	return func(o spec) bool {
		return o.Bounded == s.Bounded && o.N == s.N && o.Keys == s.Keys && o.Rate == s.Rate && o.C == s.C && o.For == s.For && o.SlowEvery == s.SlowEvery
	}
}

// checkTargets judges the run against the targets. Figures come from the
// run; the thresholds are the project's. Where a target must hold in every
// run, the worst run is judged.
func checkTargets(rows []row) []target {
	var ts []target
	add := func(judged, ok bool, name, format string, args ...any) {
		ts = append(ts, target{name: name, judged: judged, met: judged && ok, detail: fmt.Sprintf(format, args...)})
	}
	for _, a := range rows {
		if a.Contender != "async" || !a.ran() {
			continue
		}
		switch a.Suite {
		case "batch":
			b, okB := find(rows, "batch", "bundle", same(a.spec))
			add(true, a.stat(ratio).med >= 0.85, fmt.Sprintf("batch %s: async ≥ 0.85 of the limit", a.shape()), "%.2f", a.stat(ratio).med)
			add(okB, a.stat(tput).med >= 0.9*b.stat(tput).med, fmt.Sprintf("batch %s: async ≥ 0.9 × bundle", a.shape()),
				"async %.0f/s, bundle %.0f/s", a.stat(tput).med, b.stat(tput).med)
			if a.N == 100_000 {
				small := a.spec
				small.N, small.Keys = 20_000, a.Keys*20_000/100_000
				if a.Keys < a.N {
					small.Keys = a.Keys
				}
				s, okS := find(rows, "batch", "async", same(small))
				add(okS, a.stat(rss).med <= 1.25*s.stat(rss).med, fmt.Sprintf("batch keys=%s: async peak RSS at N=100,000 ≤ 1.25 × at N=20,000", keysText(a.Keys, a.N)),
					"%.0f MB against %.0f MB", a.stat(rss).med, s.stat(rss).med)
			}
		case "stream":
			keepUp(&ts, rows, a, a.C+time.Second)
		case "csweep":
			if a.C == 100*time.Millisecond {
				keepUp(&ts, rows, a, 400*time.Millisecond)
			}
		case "overload":
			limit := a.limitRate()
			add(true, a.stat(sustained).lo >= 0.9*limit, "overload 1.2×P/L: async sustains ≥ 0.9 × P/L while the source runs (every run)",
				"worst %.0f/s against %.0f/s", a.stat(sustained).lo, 0.9*limit)
			add(true, a.stat(drain).lo >= 0.9*limit, "overload 1.2×P/L: the backlog drains at ≥ 0.9 × P/L after the source stops (every run)",
				"worst %.0f/s against %.0f/s (backlog %.0f)", a.stat(drain).lo, 0.9*limit, a.stat(backlog).med)
			add(true, a.stat(peakHeld).hi <= float64(a.held()), "overload 1.2×P/L: the worker never holds more than WithMaxItemsHeld (every run)",
				"peak %.0f held, bound %d", a.stat(peakHeld).hi, a.held())
		case "heavytail":
			limit := a.limitRate()
			add(true, a.stat(sustained).lo >= 0.8*limit, "heavy tail: async sustains ≥ 0.8 × P / mean L (every run)",
				"worst %.0f/s against %.0f/s", a.stat(sustained).lo, 0.8*limit)
		case "steady":
			short := a.spec
			short.Suite, short.For = "stream", *streamFor
			s, okS := find(rows, "stream", "async", same(short))
			add(okS, a.stat(rss).med <= 1.2*s.stat(rss).med, fmt.Sprintf("stream: async peak RSS with a %v source ≤ 1.2 × with a %v one", a.For, short.For),
				"%.0f MB against %.0f MB", a.stat(rss).med, s.stat(rss).med)
		}
	}
	if py, ok := find(rows, "stream", "python", func(s spec) bool { return true }); ok {
		if a, okA := find(rows, "stream", "async", same(py.spec)); okA {
			add(true, a.stat(p99).med < py.stat(p99).med, fmt.Sprintf("stream %s: async p99 below python's", a.shape()), "async %.0f ms, python %.0f ms", a.stat(p99).med, py.stat(p99).med)
			add(true, a.stat(tput).med >= 5*py.stat(tput).med, fmt.Sprintf("stream %s: async ≥ 5 × python throughput (N / wall)", a.shape()),
				"async %.0f/s, python %.0f/s; sustained while the source ran: async %.0f/s, python %.0f/s", a.stat(tput).med, py.stat(tput).med, a.stat(sustained).med, py.stat(sustained).med)
		}
	}
	return ts
}

// keepUp adds the targets of an unbounded workload below capacity: async
// sustains the source rate (or, where even the runner's floor cannot, at
// least the floor's rate), with a p99 within bound, at no more than 0.3 CPU s
// per 1,000 elements, in every run. Sustained is measured over a window whose
// edges cost a few per cent, so keeping up means 0.97 of the rate.
func keepUp(ts *[]target, rows []row, a row, p99Bound time.Duration) {
	rate := a.ratePerS()
	want, why := 0.97*rate, "the source rate"
	if f, ok := find(rows, a.Suite, "floor", same(a.spec)); ok && f.stat(sustained).med < want {
		want, why = f.stat(sustained).med, "the floor's rate (the runner cannot keep up even without calls)"
	}
	name := fmt.Sprintf("%s %s: async", a.Suite, a.shape())
	worst := a.stat(sustained).lo
	*ts = append(*ts,
		target{name: name + " sustains " + why + " (every run)", judged: true, met: worst >= want, detail: fmt.Sprintf("worst %.0f/s, want %.0f/s", worst, want)},
		target{name: name + fmt.Sprintf(" p99 ≤ %v (every run)", p99Bound), judged: true, met: a.stat(p99).hi <= float64(p99Bound.Milliseconds()), detail: fmt.Sprintf("worst %.0f ms", a.stat(p99).hi)},
		target{name: name + " ≤ 0.3 CPU s per 1,000 elements (every run)", judged: true, met: a.stat(cpu).hi <= 0.3, detail: fmt.Sprintf("worst %.3f", a.stat(cpu).hi)})
}

func printTargets(w io.Writer, ts []target) {
	fmt.Fprintln(w, "\ntargets:")
	met := 0
	for _, t := range ts {
		fmt.Fprintf(w, "- %s: %s (%s)\n", t.name, t.verdict(), t.detail)
		if t.met {
			met++
		}
	}
	fmt.Fprintf(w, "%d of %d targets met\n", met, len(ts))
}

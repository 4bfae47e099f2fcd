package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// target is one of the project's speed targets, judged on a run.
type target struct {
	name   string
	met    bool
	judged bool // false when the run lacks a row to compare with
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

// checker judges the targets of a run's rows.
type checker struct {
	rows []row
	ts   []target
}

// add judges the target name on subject, the row it is about. A subject
// with no run, or with a failed run, misses it (a failed repeat is a miss,
// not dropped); missing, when not empty, says which row to compare with is
// absent, and leaves the target not judged; otherwise ok decides.
func (c *checker) add(name string, subject row, missing string, ok func() (bool, string)) {
	t := target{name: name, judged: true}
	switch {
	case !subject.ran():
		t.detail = "no run: " + subject.notes()
	case subject.failed():
		_, figures := ok()
		t.detail = fmt.Sprintf("a run failed (%s); figures of the runs measured: %s", subject.notes(), figures)
	case missing != "":
		t.judged, t.detail = false, missing
	default:
		t.met, t.detail = ok()
	}
	c.ts = append(c.ts, t)
}

// ref finds the row of a suite and contender whose workload matches, and
// says what is missing when there is none with figures.
func (c *checker) ref(suite, contender string, match func(spec) bool) (row, string) {
	for _, r := range c.rows {
		if r.Suite == suite && r.Contender == contender && match(r.spec) {
			if !r.ran() {
				return r, fmt.Sprintf("the %s row to compare with has no figures (%s)", contender, r.notes())
			}
			return r, ""
		}
	}
	return row{}, fmt.Sprintf("the run has no %s row in %s to compare with", contender, suite)
}

// same matches specs of the same workload.
func same(s spec) func(spec) bool {
	return func(o spec) bool {
		return o.Bounded == s.Bounded && o.P == s.P && o.N == s.N && o.Keys == s.Keys && o.Rate == s.Rate && o.C == s.C && o.For == s.For &&
			o.Idle == s.Idle && o.SlowEvery == s.SlowEvery && slices.Equal(o.SlowAt, s.SlowAt) && o.SlowX == s.SlowX &&
			o.window() == s.window() && o.Windows == s.Windows && o.Batch == s.Batch && o.JobServer == s.JobServer &&
			o.Endpoint == s.Endpoint && o.Runner == s.Runner
	}
}

// cpuUnjudged says why a CPU target of a (worker and runner together) is
// not judged: on a job server the bench did not start the runner's CPU is
// not measured; else "".
func cpuUnjudged(a row) string {
	if a.runnerMeasured() {
		return ""
	}
	return "the runner's CPU is not measured: " + external{a.Endpoint, a.Runner}.label() + " is a job server the bench did not start"
}

// checkTargets judges the run against the targets. Figures come from the
// run; the thresholds are the project's, exactly as each name states them.
// Where a target must hold in every run, the worst run is judged, and a
// failed run misses it.
func checkTargets(rows []row) []target {
	c := &checker{rows: rows}
	for _, a := range rows {
		if a.Contender != "async" {
			continue
		}
		switch a.Suite {
		case "batch":
			c.batch(a)
		case "stream":
			c.stream(a)
		case "windows":
			c.keepUp(a, a.C+time.Second)
		case "robust":
			c.robust(a)
		case "fewer": // issue 22: batches of 50 at 0.8 of their limit, p99 ≤ C + 1 s (+ the batch wait, which the bench leaves at 0)
			c.fewer(a)
		case "windowed":
			c.add(fmt.Sprintf("windowed %s: async ≥ 0.85 of the limit", a.shape()), a, "", func() (bool, string) {
				return a.stat(ratio).med >= 0.85, fmt.Sprintf("%.2f", a.stat(ratio).med)
			})
		case "sparse":
			c.sparse(a)
		case "csweep":
			if a.C == 100*time.Millisecond {
				c.keepUp(a, 400*time.Millisecond)
			}
		case "overload":
			c.overload(a)
		case "heavytail":
			limit := a.limitRate()
			c.add("heavy tail: async sustains ≥ 0.8 × P / mean L (every run)", a, "", func() (bool, string) {
				return a.stat(sustained).lo >= 0.8*limit, fmt.Sprintf("worst %.0f/s against %.0f/s", a.stat(sustained).lo, 0.8*limit)
			})
		case "steady":
			c.steady(a)
		}
	}
	c.againstPython()
	return c.ts
}

// batch adds the batch suite's targets: async at 0.85 of the limit and at
// 0.9 of bundle's throughput; and at N = 100,000, a worker peak RSS within
// 1.25 × that at N = 20,000.
func (c *checker) batch(a row) {
	c.add(fmt.Sprintf("batch %s: async ≥ 0.85 of the limit", a.shape()), a, "", func() (bool, string) {
		return a.stat(ratio).med >= 0.85, fmt.Sprintf("%.2f", a.stat(ratio).med)
	})
	b, missing := c.ref("batch", "bundle", same(a.spec))
	c.add(fmt.Sprintf("batch %s: async throughput ≥ 0.9 × bundle's", a.shape()), a, missing, func() (bool, string) {
		return a.stat(tput).med >= 0.9*b.stat(tput).med, fmt.Sprintf("async %.0f/s, bundle %.0f/s", a.stat(tput).med, b.stat(tput).med)
	})
	if a.N == 100_000 {
		small := a.spec
		small.N = 20_000
		if a.Keys == a.N {
			small.Keys = small.N
		}
		s, missing := c.ref("batch", "async", same(small))
		c.add(fmt.Sprintf("batch keys=%s: async worker peak RSS at N=100,000 ≤ 1.25 × at N=20,000", keysText(a.Keys, a.N)), a, missing, func() (bool, string) {
			return a.stat(rss).med <= 1.25*s.stat(rss).med, fmt.Sprintf("%.0f MB against %.0f MB", a.stat(rss).med, s.stat(rss).med)
		})
	}
}

// stream adds keepUp's targets with a p99 bound of 400 ms, and a p99
// within 3 × bundle's.
func (c *checker) stream(a row) {
	c.keepUp(a, 400*time.Millisecond)
	b, missing := c.ref("stream", "bundle", same(a.spec))
	c.add(fmt.Sprintf("stream %s: async p99 ≤ 3 × bundle's p99", a.shape()), a, missing, func() (bool, string) {
		return a.stat(p99).med <= 3*b.stat(p99).med, fmt.Sprintf("async %.0f ms, bundle %.0f ms (medians)", a.stat(p99).med, b.stat(p99).med)
	})
}

// fewer adds the fewer suite's targets on its batches of 50: keepUp's rate
// target and a p99 within C + 1 s, not judged where the runner cannot move
// the rate (runnerCannot).
func (c *checker) fewer(a row) {
	if a.Batch != 50 {
		return // the other sizes are shown, not judged
	}
	why := c.runnerCannot(a)
	c.sustains(a, why)
	c.p99Within(a, a.C+time.Second, why)
}

// sparse adds the sparse suite's targets: a p99 within 400 ms and at most
// 0.5 CPU s (worker and runner) per 1,000 outputs, in every run.
func (c *checker) sparse(a row) {
	c.add(fmt.Sprintf("sparse %s: async p99 ≤ 400ms (every run)", a.shape()), a, "", func() (bool, string) {
		return a.stat(p99).hi <= 400, fmt.Sprintf("worst %.0f ms", a.stat(p99).hi)
	})
	c.add(fmt.Sprintf("sparse %s: async ≤ 0.5 CPU s (worker + runner) per 1,000 outputs (every run)", a.shape()), a, cpuUnjudged(a), func() (bool, string) {
		return a.stat(cpu).hi <= 0.5, fmt.Sprintf("worst %.3f (worker %.3f, runner %.3f)", a.stat(cpu).hi, a.stat(cpuWorker).hi, a.stat(cpuRunner).hi)
	})
}

// overload adds the targets of a source at 1.2 × P/L: async sustains 0.9 ×
// P/L while the source runs, drains the backlog at 0.9 × P/L after, and
// never holds more than WithMaxItemsHeld; in every run.
func (c *checker) overload(a row) {
	limit := a.limitRate()
	c.add("overload 1.2×P/L: async sustains ≥ 0.9 × P/L while the source runs (every run)", a, "", func() (bool, string) {
		return a.stat(sustained).lo >= 0.9*limit, fmt.Sprintf("worst %.0f/s against %.0f/s", a.stat(sustained).lo, 0.9*limit)
	})
	c.add("overload 1.2×P/L: the backlog drains at ≥ 0.9 × P/L after the source stops (every run)", a, "", func() (bool, string) {
		return a.stat(drain).lo >= 0.9*limit, fmt.Sprintf("worst %.0f/s against %.0f/s (backlog %.0f)", a.stat(drain).lo, 0.9*limit, a.stat(backlog).med)
	})
	c.add("overload 1.2×P/L: the worker never holds more than WithMaxItemsHeld (every run)", a, "", func() (bool, string) {
		return a.stat(peakHeld).hi <= float64(a.held()), fmt.Sprintf("peak %.0f held, bound %d", a.stat(peakHeld).hi, a.held())
	})
}

// steady adds the steady suite's target: the worker's peak RSS with a long
// source within 1.2 × that of the stream suite's shorter one.
func (c *checker) steady(a row) {
	s, missing := c.ref("stream", "async", func(o spec) bool { // the same workload with a shorter source
		short := a.spec
		short.For = o.For
		return o.For < a.For && same(short)(o)
	})
	c.add(fmt.Sprintf("steady: async worker peak RSS with a %v source ≤ 1.2 × with the stream suite's shorter one", a.For), a, missing, func() (bool, string) {
		return a.stat(rss).med <= 1.2*s.stat(rss).med, fmt.Sprintf("%.0f MB against %.0f MB (a %v source)", a.stat(rss).med, s.stat(rss).med, s.For)
	})
}

// againstPython compares async with each python row of the python suite
// (both on a prism job server).
func (c *checker) againstPython() {
	for _, py := range c.rows {
		if py.Suite != "python" || py.Contender != "python" || strings.HasPrefix(py.Note, "skipped: python runs") {
			continue
		}
		a, missingA := c.ref("python", "async", same(py.spec))
		if missingA != "" {
			c.ts = append(c.ts, target{name: fmt.Sprintf("python %s: async against python", py.shape()), detail: missingA})
			continue
		}
		_, missing := c.ref("python", "python", same(py.spec))
		c.add(fmt.Sprintf("python %s: async p99 below python's", a.shape()), a, missing, func() (bool, string) {
			return a.stat(p99).med < py.stat(p99).med, fmt.Sprintf("async %.0f ms, python %.0f ms", a.stat(p99).med, py.stat(p99).med)
		})
		c.add(fmt.Sprintf("python %s: async throughput ≥ 5 × python's", a.shape()), a, missing, func() (bool, string) {
			return a.stat(tput).med >= 5*py.stat(tput).med, fmt.Sprintf("async %.0f/s, python %.0f/s; sustained while the source ran: async %.0f/s, python %.0f/s",
				a.stat(tput).med, py.stat(tput).med, a.stat(sustained).med, py.stat(sustained).med)
		})
	}
}

// keepUp adds the targets of an unbounded workload below capacity: async
// sustains 0.97 of the source rate (in outputs: one per element and window),
// or where passthrough, the runner moving elements with no call at all,
// sustains less, passthrough's rate; with a
// p99 within bound, at no more than 0.3 CPU s (worker and runner) per 1,000
// outputs; in every run.
func (c *checker) keepUp(a row, p99Bound time.Duration) {
	c.sustains(a, "")
	c.p99Within(a, p99Bound, "")
	name := fmt.Sprintf("%s %s: async", a.Suite, a.shape())
	c.add(name+" ≤ 0.3 CPU s (worker + runner) per 1,000 outputs (every run)", a, cpuUnjudged(a), func() (bool, string) {
		return a.stat(cpu).hi <= 0.3, fmt.Sprintf("worst %.3f (worker %.3f, runner %.3f)", a.stat(cpu).hi, a.stat(cpuWorker).hi, a.stat(cpuRunner).hi)
	})
}

// robust adds the targets of issue 35 on a row of the robust suite:
// async sustains 0.97 of the source rate; its p99 is within C + 0.5 s, and
// within 400 ms at C = 100 ms over 10 and 100 keys on embedded prism; its
// CPU (worker and runner) is within 1.5 × timeronly's on the same row, and
// 1.5 s per 1,000 outputs on any; in every run.
func (c *checker) robust(a row) {
	c.sustains(a, "")
	bound := a.C + 500*time.Millisecond
	if a.embedded() && a.C == 100*time.Millisecond && a.Keys <= 100 {
		bound = 400 * time.Millisecond
	}
	c.p99Within(a, bound, "")
	name := fmt.Sprintf("%s %s: async", a.Suite, a.shape())
	t, missing := c.ref(a.Suite, "timeronly", same(a.spec))
	if why := cpuUnjudged(a); why != "" {
		missing = why
	}
	c.add(name+" CPU (worker + runner) ≤ 1.5 × timeronly's (every run against its median)", a, missing, func() (bool, string) {
		return a.stat(cpu).hi <= 1.5*t.stat(cpu).med, fmt.Sprintf("worst %.3f, timeronly %.3f", a.stat(cpu).hi, t.stat(cpu).med)
	})
	c.add(name+" ≤ 1.5 CPU s (worker + runner) per 1,000 outputs (every run)", a, cpuUnjudged(a), func() (bool, string) {
		return a.stat(cpu).hi <= 1.5, fmt.Sprintf("worst %.3f (worker %.3f, runner %.3f)", a.stat(cpu).hi, a.stat(cpuWorker).hi, a.stat(cpuRunner).hi)
	})
}

// sustains adds keepUp's rate target; missing, when not empty, says why it
// is not judged.
func (c *checker) sustains(a row, missing string) {
	want, why := 0.97*a.ratePerS()*float64(a.window().perElement()), "≥ 0.97 × the source rate"
	if f, missing := c.ref(a.Suite, "passthrough", same(a.spec)); missing == "" && f.stat(sustained).med < want {
		want, why = f.stat(sustained).med, "≥ passthrough's median rate (the runner cannot keep up even without calls)"
	}
	c.add(fmt.Sprintf("%s %s: async sustains %s (every run)", a.Suite, a.shape(), why), a, missing, func() (bool, string) {
		return a.stat(sustained).lo >= want, fmt.Sprintf("worst %.0f/s, want %.0f/s", a.stat(sustained).lo, want)
	})
}

// runnerCannot says why a's rate is beyond the runner here when timeronly,
// the same state and timers with no call, does not sustain 0.9 of it on the
// same workload; else "".
func (c *checker) runnerCannot(a row) string {
	t, missing := c.ref(a.Suite, "timeronly", same(a.spec))
	if missing != "" || t.stat(sustained).med >= 0.9*a.ratePerS() {
		return ""
	}
	return fmt.Sprintf("timeronly, the same state and timers with no call, sustains %.0f/s of the source's %.0f/s (median): the runner's stateful stage cannot move this rate on this machine",
		t.stat(sustained).med, a.ratePerS())
}

// p99Within adds keepUp's latency target, as sustains.
func (c *checker) p99Within(a row, bound time.Duration, missing string) {
	c.add(fmt.Sprintf("%s %s: async p99 ≤ %v (every run)", a.Suite, a.shape(), bound), a, missing, func() (bool, string) {
		return a.stat(p99).hi <= float64(bound.Milliseconds()), fmt.Sprintf("worst %.0f ms", a.stat(p99).hi)
	})
}

func printTargets(w io.Writer, ts []target) {
	fmt.Fprintln(w, "\ntargets:")
	met, missed, unjudged := 0, 0, 0
	for _, t := range ts {
		fmt.Fprintf(w, "- %s: %s (%s)\n", t.name, t.verdict(), t.detail)
		switch {
		case !t.judged:
			unjudged++
		case t.met:
			met++
		default:
			missed++
		}
	}
	fmt.Fprintf(w, "%d of %d targets met, %d missed, %d not judged\n", met, len(ts), missed, unjudged)
}

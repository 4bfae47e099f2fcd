package main

import (
	"fmt"
	"strings"
	"time"
)

// target is one of the project's speed targets, checked against a run.
type target struct {
	name   string
	met    bool
	detail string
	missed bool // false when the run lacks the rows to judge it
}

func find(results []result, scenario, contender string) (result, bool) {
	for _, r := range results {
		if r.Scenario == scenario && r.Contender == contender && !strings.HasPrefix(r.Note, "skipped") {
			return r, true
		}
	}
	return result{}, false
}

// checkTargets judges the run against the targets. Figures come from the
// run; the thresholds are the project's.
func checkTargets(results []result) []target {
	var ts []target
	add := func(name string, ok, judged bool, format string, args ...any) {
		ts = append(ts, target{name: name, met: ok && judged, missed: judged && !ok, detail: fmt.Sprintf(format, args...)})
	}
	a, okA := find(results, "batch", "async")
	b, okB := find(results, "batch", "bundle")
	add("batch: async ratio_to_limit >= 0.85", okA && a.RatioToLimit >= 0.85, okA, "async %.2f", a.RatioToLimit)
	add("batch: async >= 0.9 x bundle", okA && okB && a.Throughput >= 0.9*b.Throughput, okA && okB, "async %.0f/s, bundle %.0f/s", a.Throughput, b.Throughput)
	sa, okS := find(results, "stream", "async")
	limit := float64(*par) / latency.Seconds()
	add("stream: async sustains >= 0.8 x P/L", okS && sa.Sustained >= 0.8*limit, okS, "async sustained %.0f/s while the source ran, 0.8 x P/L = %.0f/s", sa.Sustained, 0.8*limit)
	// The commit delay is read from end-to-end latency minus the call: the
	// phase of a key's round lies within one period, so the bound is C.
	bound := *freq + 500*time.Millisecond
	delay := time.Duration(sa.P99Ms*float64(time.Millisecond)) - *latency
	add("stream: async commit delay p99 <= C + jitter + 0.5 s", okS && delay <= bound, okS, "p99 latency - L = %v, bound %v", delay.Round(time.Millisecond), bound)
	py, okP := find(results, "stream", "python")
	add("stream: async >= 5 x python throughput", okS && okP && sa.Throughput >= 5*py.Throughput, okS && okP, "async %.0f/s, python %.0f/s (sustained while the source ran: async %.0f/s, python %.0f/s)", sa.Throughput, py.Throughput, sa.Sustained, py.Sustained)
	add("stream: async p99 below python's", okS && okP && sa.P99Ms < py.P99Ms, okS && okP, "async %.0f ms, python %.0f ms", sa.P99Ms, py.P99Ms)
	return ts
}

func printTargets(ts []target) {
	fmt.Println("\ntargets:")
	for _, t := range ts {
		verdict := "not judged (rows missing)"
		switch {
		case t.met:
			verdict = "met"
		case t.missed:
			verdict = "MISSED"
		}
		fmt.Printf("- %s: %s (%s)\n", t.name, verdict, t.detail)
	}
}

package main

// The service suite's report: its table, and issue 21's targets judged on
// its runs.

import "fmt"

func printServiceTable(runs []*serviceRun) {
	fmt.Printf("\n## service: the enrich job against its loopback service (capacity %d, L=%v: best %.0f calls/s)\n\n", svcCapacity, svcLatency, svcBest)
	fmt.Println("| run | records in/out/failed | wall | calls | overloaded | limit at end | served/s while active | retries per first attempt |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		if r.err != nil {
			fmt.Printf("| %s | failed: %v | | | | | | |\n", r.desc, r.err)
			continue
		}
		from, to := r.active()
		fmt.Printf("| %s | %d/%d/%d | %.1f s | %d | %d (%.2f%%) | %d | %.0f | %.3f |\n", r.desc, r.in, r.ok, r.failed, r.wall.Seconds(),
			r.calls, r.overloaded, 100*r.overloadShare(), r.limit, r.meanServed(from, to), float64(r.calls-r.in)/float64(max(r.in, 1)))
	}
}

// printServiceTargets judges issue 21's targets.
func printServiceTargets(runs []*serviceRun, shared []*serviceRun) {
	by := map[string]*serviceRun{}
	for _, r := range runs {
		by[r.name] = r
	}
	fmt.Print("\n## service targets\n\n")
	judge := func(ok bool, what, got string) {
		mark := "MISS"
		if ok {
			mark = "met "
		}
		fmt.Printf("- %s %s: %s\n", mark, what, got)
	}
	if r := by["adaptive"]; r.err == nil {
		at := r.settled(0.9, svcBest)
		_, to := r.active()
		got := r.meanServed(max(at, 0), to)
		judge(at >= 0 && at <= 5 && got >= 0.9*svcBest, "adaptive settles within 5 s at >= 0.9 of the best throughput",
			fmt.Sprintf("settled at second %d, %.0f calls/s after (%.2f of %.0f)", at, got, got/svcBest, svcBest))
		judge(r.overloadShare() <= 0.01, "adaptive: at most 1% of calls overloaded", fmt.Sprintf("%.2f%%", 100*r.overloadShare()))
	}
	if r := by["drop"]; r.err == nil {
		// A quarter of the peak: the run at half capacity serves about half
		// of it, and its end must not depend on which side of half it is.
		_, to := r.activeAbove(0.25)
		got := r.meanServed(25, to)
		best := svcBest / 2
		judge(got >= 0.8*best && got <= 1.2*best, "capacity 24 -> 12 at 15 s: within 20% of the new best from 10 s after",
			fmt.Sprintf("%.0f calls/s over seconds 25-%d (%.2f of %.0f)", got, to, got/best, best))
		judge(r.overloadShare() < 0.02, "capacity drop: overload under 2% over the run", fmt.Sprintf("%.2f%%", 100*r.overloadShare()))
	}
	if r := by["rate500"]; r.err == nil {
		judge(within(r.windows5, 500, 0.05), "--rate_limit 500: every 5 s window within 5% of 500", fmt.Sprint(r.windows5))
	}
	if len(shared) == 2 && shared[0].err == nil && shared[1].err == nil {
		judge(within(shared[0].windows5, 500, 0.05), "--shared_rate_limit 500, two workers: their sum in every 5 s window within 5% of 500",
			fmt.Sprintf("%v (A %d records, B %d)", shared[0].windows5, shared[0].in, shared[1].in))
	} else if len(shared) > 0 {
		fmt.Printf("- MISS shared rate: not run: %v\n", shared[0].err)
	}
	if r := by["fixed64"]; r.err == nil {
		retries, firsts, secs := r.underOverload()
		allowed := 0.1*float64(firsts) + 10*float64(secs)
		judge(float64(retries) <= allowed, "fixed 64, the seconds under overload (> 5% refused): retries within the budget (10% of first attempts + 10/s)",
			fmt.Sprintf("%d retries for %d first attempts in %d s (%.3f), budget %.0f; over the whole run %d retries for %d records (%.3f)",
				retries, firsts, secs, float64(retries)/float64(max(firsts, 1)), allowed, r.calls-r.in, r.in, float64(r.calls-r.in)/float64(max(r.in, 1))))
	}
	for _, r := range append(runs, shared...) {
		if r.err == nil && r.ok+r.failed != r.in {
			judge(false, r.name+": every record in the output or in failures", fmt.Sprintf("%d + %d != %d", r.ok, r.failed, r.in))
		}
	}
}

// underOverload sums the retries and the first attempts that arrived in
// the seconds under overload, in which the service refused more than 5% of
// what it answered (where the retry budget binds), and counts those seconds.
func (r *serviceRun) underOverload() (retries, firsts, secs int64) {
	for i := range r.arrived {
		answered := r.served[i] + r.refused[i]
		if i < len(r.retries) && answered > 0 && r.refused[i]*20 > answered {
			retries += r.retries[i]
			firsts += r.arrived[i] - r.retries[i]
			secs++
		}
	}
	return retries, firsts, secs
}

func within(vs []int64, want, tol float64) bool {
	if len(vs) == 0 {
		return false
	}
	for _, v := range vs {
		if float64(v) < want*(1-tol) || float64(v) > want*(1+tol) {
			return false
		}
	}
	return true
}

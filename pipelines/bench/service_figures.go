package main

// The service suite's figures: what each job printed, read back, and
// what its seconds show (the active part of the run, its mean rate, when it
// settled, its share of overloaded calls).

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var (
	recordsRe = regexp.MustCompile(`records: in=(\d+) out=(\d+) failed=(\d+) wall=(\S+) throughput=\S+ calls=(\d+) overloaded=(\d+) concurrency=(\d+)`)
	perSecRe  = regexp.MustCompile(`service: (arrived|served|refused|retries) per second:((?: \d+)*)`)
	window5Re = regexp.MustCompile(`service: calls arrived per second in each 5 s window:((?: \d+)*)`)
)

func (r *serviceRun) parse() {
	if m := recordsRe.FindStringSubmatch(r.out); m != nil {
		n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
		r.in, r.ok, r.failed, r.calls, r.overloaded, r.limit = n(1), n(2), n(3), n(5), n(6), n(7)
		r.wall, _ = time.ParseDuration(m[4])
	} else if r.err == nil {
		r.err = fmt.Errorf("no summary line in the job's output")
	}
	for _, m := range perSecRe.FindAllStringSubmatch(r.out, -1) {
		vs := ints(m[2])
		switch m[1] {
		case "arrived":
			r.arrived = vs
		case "served":
			r.served = vs
		case "refused":
			r.refused = vs
		case "retries":
			r.retries = vs
		}
	}
	if m := window5Re.FindStringSubmatch(r.out); m != nil {
		r.windows5 = ints(m[1])
	}
}

func ints(s string) []int64 {
	var out []int64
	for _, f := range strings.Fields(s) {
		v, _ := strconv.ParseInt(f, 10, 64)
		out = append(out, v)
	}
	return out
}

// active is the seconds in which the service served at least half of what
// it served at its busiest: the run less its start and its tail.
func (r *serviceRun) active() (from, to int) { return r.activeAbove(0.5) }

// activeAbove is the seconds from the first to the last in which the
// service served at least frac of what it served at its busiest.
func (r *serviceRun) activeAbove(frac float64) (from, to int) {
	var peak int64
	for _, v := range r.served {
		peak = max(peak, v)
	}
	from, to = -1, -1
	for i, v := range r.served {
		if float64(v) >= frac*float64(peak) {
			if from < 0 {
				from = i
			}
			to = i + 1
		}
	}
	return max(from, 0), max(to, 0)
}

// meanServed is the mean served per second over seconds [from, to).
func (r *serviceRun) meanServed(from, to int) float64 {
	if to <= from || to > len(r.served) {
		return 0
	}
	var sum int64
	for _, v := range r.served[from:to] {
		sum += v
	}
	return float64(sum) / float64(to-from)
}

// settled is the first second from which every active second served at
// least share of best, or -1.
func (r *serviceRun) settled(share, best float64) int {
	_, to := r.active()
	at := -1
	for i := 0; i < to; i++ {
		if float64(r.served[i]) >= share*best {
			if at < 0 {
				at = i
			}
		} else {
			at = -1
		}
	}
	return at
}

func (r *serviceRun) overloadShare() float64 {
	if r.calls == 0 {
		return 0
	}
	return float64(r.overloaded) / float64(r.calls)
}

func (r *serviceRun) line() string {
	if r.err != nil {
		return "FAILED: " + r.err.Error()
	}
	from, to := r.active()
	return fmt.Sprintf("in=%d out=%d failed=%d wall=%v calls=%d overloaded=%d (%.1f%%) limit=%d served/s=%.0f (seconds %d-%d)",
		r.in, r.ok, r.failed, r.wall, r.calls, r.overloaded, 100*r.overloadShare(), r.limit, r.meanServed(from, to), from, to)
}

package main

// The fewer-calls suite (issue 22), its bounded part: the enrich job in a
// process of its own against its loopback service (L = 20 ms a call, plus
// 0.2 ms per record of a batch call), at parallelism 8, with one record per
// call and with batches of 10, 50 and 200 (async.BatchParDo); and, at
// parallelism 32, its lookup form (customer profiles joined to the records)
// on records of which nine in ten repeat a customer, without and with
// --cache. Its figures come
// from the job's summary line and its output files. Run only when named
// (--suites fewer).

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	fewerParallelism = 8
	fewerLatency     = 20 * time.Millisecond
	fewerItemCost    = 200 * time.Microsecond
)

// fewerRun is one job of the suite and what its summary said.
type fewerRun struct {
	name, desc string
	batch      int // 0: one record per call
	records    int

	out                   string
	ok, failed            int64
	wall                  time.Duration
	requests              int64
	perRequest, perSecond float64
	err                   error
}

var fewerRe = regexp.MustCompile(`records: in=\d+ out=(\d+) failed=(\d+) wall=(\S+) throughput=(\d+)/s calls=(\d+)(?:.* requests=(\d+) per_request=([\d.]+))?`)

func (r *fewerRun) parse() {
	m := fewerRe.FindStringSubmatch(r.out)
	if m == nil {
		if r.err == nil {
			r.err = fmt.Errorf("no summary line in the job's output")
		}
		return
	}
	r.ok, _ = strconv.ParseInt(m[1], 10, 64)
	r.failed, _ = strconv.ParseInt(m[2], 10, 64)
	r.wall, _ = time.ParseDuration(m[3])
	r.perSecond, _ = strconv.ParseFloat(m[4], 64)
	r.requests, _ = strconv.ParseInt(m[5], 10, 64) // calls: one per record without batches
	if m[6] != "" {
		r.requests, _ = strconv.ParseInt(m[6], 10, 64)
		r.perRequest, _ = strconv.ParseFloat(m[7], 64)
	} else if r.requests > 0 {
		r.perRequest = float64(r.ok+r.failed) / float64(r.requests)
	}
}

func runFewerSuite() error {
	dir, bin, err := buildEnrich("bench-fewer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	runs := []*fewerRun{
		{name: "element", desc: "one record per call (12,000 records: its rate is steady from the first second)", records: 12000},
		{name: "batch10", desc: "batches of 10", batch: 10, records: 30000},
		{name: "batch50", desc: "batches of 50", batch: 50, records: 30000},
		{name: "batch200", desc: "batches of 200", batch: 200, records: 30000},
	}
	for _, r := range runs {
		args := []string{"--output", filepath.Join(dir, r.name), "--latency=" + fewerLatency.String(), "--batch_item_cost=" + fewerItemCost.String(),
			"--generate=" + strconv.Itoa(r.records), "--customers=20000", "--concurrency=" + strconv.Itoa(fewerParallelism)}
		if r.batch > 0 {
			args = append(args, "--batch_size="+strconv.Itoa(r.batch))
		}
		r.out, r.err = runEnrich(bin, args...)
		r.parse()
		fmt.Printf("   fewer %-9s %s\n", r.name, r.line())
	}
	printFewer(runs)
	return runCacheRows(bin, dir)
}

// runCacheRows runs the lookup form on 30,000 records over 3,000 customers
// (90% repeats) without and with the cache, and judges the cache target:
// calls at most 1.1 x the customers, the enriched records identical.
func runCacheRows(bin, dir string) error {
	const records, customers = 30000, 3000
	base := []string{"--latency=" + fewerLatency.String(), "--generate=" + strconv.Itoa(records), "--customers=" + strconv.Itoa(customers), "--concurrency=32"}
	var outs [2][]byte
	var summaries [2]string
	for i, extra := range []string{"--lookup_by_customer", "--cache=100000,10m"} {
		out := filepath.Join(dir, fmt.Sprintf("cache%d", i))
		text, err := runEnrich(bin, append(append([]string{"--output", out}, base...), extra)...)
		if err != nil {
			return fmt.Errorf("enrich %s: %v\n%s", extra, err, text)
		}
		summaries[i] = cacheSummaryRe.FindString(text)
		body, err := os.ReadFile(filepath.Join(out, "enriched.jsonl"))
		if err != nil {
			return err
		}
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		slices.Sort(lines)
		outs[i] = []byte(strings.Join(lines, "\n"))
		fmt.Printf("   fewer %-9s %s\n", []string{"lookup", "cached"}[i], summaries[i])
	}
	calls := func(s string) int {
		m := regexp.MustCompile(`calls=(\d+)`).FindStringSubmatch(s)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	same := bytes.Equal(outs[0], outs[1])
	verdict := "met"
	if c := calls(summaries[1]); c < 0 || float64(c) > 1.1*customers || !same {
		verdict = "MISSED"
	}
	fmt.Printf("\nfewer calls, cache: %d records over %d customers (90%% repeats), parallelism 32, L = %v\n", records, customers, fewerLatency)
	fmt.Printf("uncached: %s\ncached:   %s\n", summaries[0], summaries[1])
	fmt.Printf("target: calls <= 1.1 x %d distinct lookups = %d: %d calls, enriched records identical to the uncached run: %v: %s\n",
		customers, int(1.1*customers), calls(summaries[1]), same, verdict)
	return nil
}

var cacheSummaryRe = regexp.MustCompile(`records: .*`)

func (r *fewerRun) line() string {
	if r.err != nil {
		return "error: " + r.err.Error()
	}
	return fmt.Sprintf("out=%d failed=%d wall=%s throughput=%.0f/s requests=%d per_request=%.1f", r.ok, r.failed, r.wall, r.perSecond, r.requests, r.perRequest)
}

// printFewer prints the table and judges the bounded target: batches of 50
// at least 10 times the per-element limit P / L at the same parallelism.
func printFewer(runs []*fewerRun) {
	perElementLimit := float64(fewerParallelism) / fewerLatency.Seconds()
	fmt.Printf("\nfewer calls, bounded: parallelism %d, L = %v a call + %v per record of a batch; per-element limit P / L = %.0f/s\n",
		fewerParallelism, fewerLatency, fewerItemCost, perElementLimit)
	fmt.Printf("%-9s %9s %12s %9s %11s %13s  %s\n", "run", "wall", "records/s", "requests", "per request", "x P/L limit", "what")
	for _, r := range runs {
		if r.err != nil {
			fmt.Printf("%-9s error: %v\n", r.name, r.err)
			continue
		}
		fmt.Printf("%-9s %9s %12.0f %9d %11.1f %13.1f  %s\n", r.name, r.wall.Round(time.Millisecond), r.perSecond, r.requests, r.perRequest,
			r.perSecond/perElementLimit, r.desc)
	}
	for _, r := range runs {
		if r.name != "batch50" || r.err != nil {
			continue
		}
		verdict := "met"
		if r.perSecond < 10*perElementLimit || r.failed > 0 {
			verdict = "MISSED"
		}
		fmt.Printf("target: batches of 50, bounded throughput >= 10 x P/L = %.0f/s: %.0f/s (%.1f x): %s\n",
			10*perElementLimit, r.perSecond, r.perSecond/perElementLimit, verdict)
	}
}

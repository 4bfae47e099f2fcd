package main

// What the job prints after its run: the async transform's Beam metrics,
// the guard's call counts, and what the loopback service saw.

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// callFigures are the guard's counts from the Beam metrics: calls made,
// calls answered with overload, and the concurrency limit at the end.
type callFigures struct {
	calls, overloaded, limit int64
	requests, requestItems   int64 // with --batch_size
	cacheHits, cacheMisses   int64 // with --cache
}

func callFiguresOf(res beam.PipelineResult) callFigures {
	var f callFigures
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if strings.Contains(c.Namespace(), "async.") {
			switch c.Name() {
			case async.MetricCalls:
				f.calls += c.Result()
			case async.MetricOverloaded:
				f.overloaded += c.Result()
			case async.MetricRequests:
				f.requests += c.Result()
			case async.MetricRequestItems:
				f.requestItems += c.Result()
			case async.MetricCacheHits:
				f.cacheHits += c.Result()
			case async.MetricCacheMisses:
				f.cacheMisses += c.Result()
			}
		}
	}
	for _, g := range res.Metrics().AllMetrics().Gauges() {
		if strings.Contains(g.Namespace(), "async.") && g.Name() == async.MetricConcurrencyLimit {
			f.limit = g.Result().Value
		}
	}
	return f
}

// serviceLines prints what the loopback service saw in each second: calls
// arrived, served and refused for load; and the calls arrived per second in
// each 5 s window.
func serviceLines(svc *service) string {
	secs := svc.perWindow(time.Second)
	var b strings.Builder
	for _, part := range []struct {
		name string
		of   func(slot) int64
	}{{"arrived", func(c slot) int64 { return c.arrived }}, {"served", func(c slot) int64 { return c.served }},
		{"refused", func(c slot) int64 { return c.refused }}, {"retries", func(c slot) int64 { return c.retries }}} {
		fmt.Fprintf(&b, "service: %s per second:", part.name)
		for _, c := range secs {
			fmt.Fprintf(&b, " %d", part.of(c))
		}
		b.WriteString("\n")
	}
	b.WriteString("service: calls arrived per second in each 5 s window:")
	for _, c := range svc.perWindow(5 * time.Second) {
		fmt.Fprintf(&b, " %.0f", float64(c.arrived)/5)
	}
	b.WriteString("\n")
	return b.String()
}

// metricsLine prints the async transform's Beam metrics.
func metricsLine(res beam.PipelineResult) string {
	counters := map[string]int64{}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if strings.Contains(c.Namespace(), "async.") {
			counters[c.Name()] += c.Result()
		}
	}
	line := "metrics:"
	for _, name := range []string{async.MetricAccepted, async.MetricStarted, async.MetricCommitted, async.MetricRetried,
		async.MetricFailed, async.MetricRescheduled, async.MetricCancelled, async.MetricDeduplicated,
		async.MetricCalls, async.MetricOverloaded, async.MetricThrottled, async.MetricThrottledMs, async.MetricBudgetWaits} {
		line += fmt.Sprintf(" %s=%d", name, counters[name])
	}
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if v := d.Result(); strings.Contains(d.Key.Namespace, "async.") && v.Count > 0 {
			line += fmt.Sprintf(" %s(mean/max)=%d/%d", d.Key.Name, v.Sum/v.Count, v.Max)
		}
	}
	return line
}

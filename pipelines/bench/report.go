package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
)

// row is one spec with the results of its runs.
type row struct {
	spec
	Runs []result `json:"runs"`
	Note string   `json:"note,omitempty"`
}

func (r row) ran() bool { return len(r.Runs) > 0 }

// stat is one figure over a row's runs.
type stat struct{ med, lo, hi float64 }

func (r row) stat(f func(result) float64) stat {
	if !r.ran() {
		return stat{}
	}
	v := make([]float64, len(r.Runs))
	for i, x := range r.Runs {
		v[i] = f(x)
	}
	sort.Float64s(v)
	return stat{med: v[len(v)/2], lo: v[0], hi: v[len(v)-1]}
}

// format prints the median, and the range when there were several runs.
func (s stat) format(verb string, runs int) string {
	if runs <= 1 {
		return fmt.Sprintf(verb, s.med)
	}
	return fmt.Sprintf(verb+" ("+verb+"–"+verb+")", s.med, s.lo, s.hi)
}

func (r row) summary() string {
	switch {
	case !r.ran():
		return r.Note
	case r.Bounded:
		return fmt.Sprintf("wall=%.2fs ratio_to_limit=%.2f rss=%.0fMB", r.stat(wallS).med, r.stat(ratio).med, r.stat(rss).med)
	}
	return fmt.Sprintf("sustained=%s/s p99=%sms cpu/1k=%s", r.stat(sustained).format("%.0f", len(r.Runs)), r.stat(p99).format("%.0f", len(r.Runs)), r.stat(cpu).format("%.3f", len(r.Runs)))
}

func wallS(x result) float64     { return x.WallS }
func ratio(x result) float64     { return x.RatioToLimit }
func rss(x result) float64       { return x.PeakRSSMB }
func sustained(x result) float64 { return x.Sustained }
func p50(x result) float64       { return x.P50Ms }
func p99(x result) float64       { return x.P99Ms }
func cpu(x result) float64       { return x.CPUSPer1k }
func tput(x result) float64      { return x.Throughput }
func drain(x result) float64     { return x.Drain }
func backlog(x result) float64   { return float64(x.Backlog) }
func peakHeld(x result) float64  { return float64(x.PeakHeld) }

// printTables prints one markdown table per suite, in the order of rows.
func printTables(w io.Writer, rows []row) {
	var suite string
	for _, r := range rows {
		if r.Suite != suite {
			suite = r.Suite
			fmt.Fprintf(w, "\n### %s\n\n", suite)
			if r.Bounded {
				fmt.Fprintln(w, "| workload | contender | wall s | throughput /s | ratio to limit | CPU s / 1k | peak RSS MB | note |")
				fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
			} else {
				fmt.Fprintln(w, "| workload | contender | runs | sustained /s | p50 ms | p99 ms | backlog at stop | drain /s | CPU s / 1k | peak RSS MB | note |")
				fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
			}
		}
		fmt.Fprintln(w, r.tableRow())
	}
}

func (r row) tableRow() string {
	n := len(r.Runs)
	if !r.ran() {
		if r.Bounded {
			return fmt.Sprintf("| %s | %s | | | | | | %s |", r.shape(), r.Contender, r.Note)
		}
		return fmt.Sprintf("| %s | %s | 0 | | | | | | | | %s |", r.shape(), r.Contender, r.Note)
	}
	if r.Bounded {
		return fmt.Sprintf("| %s | %s | %.2f | %.0f | %.2f | %.3f | %.0f | %s |", r.shape(), r.Contender,
			r.stat(wallS).med, r.stat(tput).med, r.stat(ratio).med, r.stat(cpu).med, r.stat(rss).med, r.Note)
	}
	return fmt.Sprintf("| %s | %s | %d | %s | %.0f | %s | %.0f | %s | %s | %.0f | %s |", r.shape(), r.Contender, n,
		r.stat(sustained).format("%.0f", n), r.stat(p50).med, r.stat(p99).format("%.0f", n), r.stat(backlog).med,
		r.stat(drain).format("%.0f", n), r.stat(cpu).format("%.3f", n), r.stat(rss).med, r.Note)
}

func writeJSON(path string, rows []row, targets []target) error {
	type targetJSON struct {
		Name   string `json:"name"`
		Result string `json:"result"`
		Detail string `json:"detail"`
	}
	var ts []targetJSON
	for _, t := range targets {
		ts = append(ts, targetJSON{t.name, t.verdict(), t.detail})
	}
	doc := map[string]any{
		"commit":  commit(),
		"machine": map[string]any{"cores": runtime.NumCPU(), "go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH},
		"params":  map[string]any{"latency_ms": latency.Milliseconds(), "p": *par, "c_ms": freq.Milliseconds(), "call": *mode, "args": strings.Join(os.Args[1:], " ")},
		"rows":    rows,
		"targets": ts,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

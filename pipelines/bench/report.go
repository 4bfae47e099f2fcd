package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// row is one spec with the results of its runs, failed ones included.
type row struct {
	spec
	Runs []result `json:"runs"`
	// Note says why the row was skipped, or what holds for every run.
	Note string `json:"note,omitempty"`
}

// measured is the runs that got as far as figures.
func (r row) measured() []result {
	var out []result
	for _, x := range r.Runs {
		if x.measured() {
			out = append(out, x)
		}
	}
	return out
}

func (r row) ran() bool { return len(r.measured()) > 0 }

// failed reports whether any run failed.
func (r row) failed() bool {
	for _, x := range r.Runs {
		if x.Failed {
			return true
		}
	}
	return false
}

// notes is the row's note, why each failed run failed and what a measured
// run noted beyond the row's note (runs alike are named together).
func (r row) notes() string {
	var parts []string
	if r.Note != "" {
		parts = append(parts, r.Note)
	}
	type note struct {
		failed bool
		text   string
	}
	var order []note
	which := map[note][]string{}
	for i, x := range r.Runs {
		if x.Note == "" || (!x.Failed && x.Note == r.Note) {
			continue
		}
		n := note{x.Failed, x.Note}
		if _, ok := which[n]; !ok {
			order = append(order, n)
		}
		which[n] = append(which[n], strconv.Itoa(i+1))
	}
	for _, n := range order {
		runs := fmt.Sprintf("(run %s of %d)", strings.Join(which[n], ", "), len(r.Runs))
		if n.failed {
			parts = append(parts, fmt.Sprintf("FAILED %s: %s", runs, oneLine(n.text, 600)))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s", runs, oneLine(n.text, 600)))
		}
	}
	return strings.ReplaceAll(strings.Join(parts, "; "), "|", "/")
}

// oneLine fits a message (a process's log, say) on one table line of at
// most n bytes, keeping its end, where the cause usually is.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return "…" + strings.ToValidUTF8(s[len(s)-n:], "")
	}
	return s
}

// stat is one figure over a row's measured runs.
type stat struct {
	med, lo, hi float64
	n           int
}

func (r row) stat(f func(result) float64) stat {
	runs := r.measured()
	if len(runs) == 0 {
		return stat{}
	}
	v := make([]float64, len(runs))
	for i, x := range runs {
		v[i] = f(x)
	}
	sort.Float64s(v)
	return stat{med: v[len(v)/2], lo: v[0], hi: v[len(v)-1], n: len(v)}
}

// format prints the median, and the range when there were several runs.
func (s stat) format(verb string) string {
	if s.n <= 1 {
		return fmt.Sprintf(verb, s.med)
	}
	return fmt.Sprintf(verb+" ("+verb+"–"+verb+")", s.med, s.lo, s.hi)
}

func (r row) summary() string {
	if !r.ran() {
		return r.notes()
	}
	cpuText := fmt.Sprintf("%.3f+%.3f", r.stat(cpuWorker).med, r.stat(cpuRunner).med)
	rssText := fmt.Sprintf("%.0f+%.0fMB", r.stat(rss).med, r.stat(rssRunner).med)
	if !r.runnerMeasured() {
		cpuText = fmt.Sprintf("%.3f+%s", r.stat(cpuWorker).med, notMeasured)
		rssText = fmt.Sprintf("%.0fMB+%s", r.stat(rss).med, notMeasured)
	}
	if r.Bounded {
		return fmt.Sprintf("startup=%.2fs wall=%.2fs ratio_to_limit=%.2f cpu/1k=%s rss=%s %s", r.stat(startup).med, r.stat(wallS).med, r.stat(ratio).med,
			cpuText, rssText, r.notes())
	}
	return fmt.Sprintf("startup=%.2fs sustained=%.0f/s p99=%.0fms (before the last 2 s %.0fms, last p50 %.0fms) max=%.0fms cpu/1k=%s %s", r.stat(startup).med, r.stat(sustained).med, r.stat(p99).med,
		r.stat(p99BeforeEnd).med, r.stat(lastP50).med, r.stat(maxMs).med, cpuText, r.notes())
}

// notMeasured fills a figure of the runner's (and a sum with it) on a job
// server the bench did not start: its process is not the bench's to see.
const notMeasured = "not measured"

func wallS(x result) float64        { return x.WallS }
func startup(x result) float64      { return x.StartupS }
func ratio(x result) float64        { return x.RatioToLimit }
func rss(x result) float64          { return x.PeakRSSMB }
func rssRunner(x result) float64    { return x.PeakRSSRunnerMB }
func sustained(x result) float64    { return x.Sustained }
func p50(x result) float64          { return x.P50Ms }
func p99(x result) float64          { return x.P99Ms }
func p999(x result) float64         { return x.P999Ms }
func maxMs(x result) float64        { return x.MaxMs }
func p99BeforeEnd(x result) float64 { return x.P99BeforeEndMs }
func lastP50(x result) float64      { return x.LastP50Ms }
func cpu(x result) float64          { return x.CPUSPer1k }
func cpuWorker(x result) float64    { return x.CPUWorkerSPer1k }
func cpuRunner(x result) float64    { return x.CPURunnerSPer1k }
func tput(x result) float64         { return x.Throughput }
func drain(x result) float64        { return x.Drain }
func backlog(x result) float64      { return float64(x.Backlog) }
func peakHeld(x result) float64     { return float64(x.PeakHeld) }
func quiet(x result) float64        { return x.QuietCPUPerS }
func quietS(x result) float64       { return x.QuietS }
func quietWorker(x result) float64  { return x.QuietCPUWorkerPerS }
func quietRunner(x result) float64  { return x.QuietCPURunnerPerS }

// printTables prints one markdown table per suite, in the order of rows.
func printTables(w io.Writer, rows []row) {
	var suite string
	for _, r := range rows {
		if r.Suite != suite {
			suite = r.Suite
			fmt.Fprintf(w, "\n### %s\n\n", suite)
			cols := unboundedCols
			if r.Bounded {
				cols = boundedCols
			} else if suite == "quiet" {
				cols = quietCols
			}
			fmt.Fprintln(w, "| "+strings.Join(cols, " | ")+" |")
			fmt.Fprintln(w, strings.Repeat("|---", len(cols))+"|")
		}
		fmt.Fprintln(w, r.tableRow())
	}
}

var (
	cpuCols       = []string{"CPU s/1k worker", "CPU s/1k runner", "CPU s/1k total", "peak RSS MB worker", "peak RSS MB runner"}
	boundedCols   = cat([]string{"workload", "contender", "wall s", "startup s", "throughput /s", "ratio to limit"}, cpuCols, []string{"note"})
	unboundedCols = cat([]string{"workload", "contender", "runs", "sustained /s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "p99 ms before the last 2 s", "last p50 ms", "backlog at stop", "drain /s"}, cpuCols, []string{"note"})
	quietCols     = cat(unboundedCols[:len(unboundedCols)-1], []string{"quiet CPU s/s", "quiet CPU s/s worker", "quiet CPU s/s runner", "note"})
)

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func (r row) tableRow() string {
	cells := []string{r.shape(), r.Contender}
	f := func(fn func(result) float64, verb string) string {
		if !r.ran() {
			return ""
		}
		return fmt.Sprintf(verb, r.stat(fn).med)
	}
	rng := func(fn func(result) float64, verb string) string {
		if !r.ran() {
			return ""
		}
		return r.stat(fn).format(verb)
	}
	// Files written before a figure existed read zero for it: no cell.
	ifMeasured := func(fn func(result) float64, show func(func(result) float64, string) string) string {
		if !r.ran() || r.stat(fn).hi == 0 {
			return ""
		}
		return show(fn, "%.0f")
	}
	runnerCPU, totalCPU, runnerRSS := f(cpuRunner, "%.3f"), rng(cpu, "%.3f"), f(rssRunner, "%.0f")
	switch {
	case r.ran() && !r.runnerMeasured():
		runnerCPU, totalCPU, runnerRSS = notMeasured, notMeasured, notMeasured
	case r.ran() && r.embedded():
		runnerRSS = "(in worker)" // one process
	}
	costs := []string{f(cpuWorker, "%.3f"), runnerCPU, totalCPU, f(rss, "%.0f"), runnerRSS}
	if r.Bounded {
		cells = append(cells, f(wallS, "%.2f"), f(startup, "%.2f"), f(tput, "%.0f"), f(ratio, "%.2f"))
	} else {
		runs := strconv.Itoa(len(r.Runs))
		if n := len(r.Runs) - len(r.measured()); n > 0 {
			runs += fmt.Sprintf(" (%d without figures)", n)
		}
		cells = append(cells, runs, rng(sustained, "%.0f"), f(p50, "%.0f"), rng(p99, "%.0f"), f(p999, "%.0f"), rng(maxMs, "%.0f"),
			ifMeasured(p99BeforeEnd, rng), ifMeasured(lastP50, f), f(backlog, "%.0f"), rng(drain, "%.0f"))
	}
	cells = append(cells, costs...)
	if !r.Bounded && r.Suite == "quiet" {
		switch {
		case r.stat(quietS).hi > 0 && !r.runnerMeasured():
			cells = append(cells, notMeasured, f(quietWorker, "%.4f"), notMeasured)
		case r.stat(quietS).hi > 0 && r.embedded(): // one process: no split while quiet
			cells = append(cells, rng(quiet, "%.4f"), "(in total)", "(in total)")
		case r.stat(quietS).hi > 0:
			cells = append(cells, rng(quiet, "%.4f"), f(quietWorker, "%.4f"), f(quietRunner, "%.4f"))
		default:
			cells = append(cells, "no quiet second", "", "")
		}
	}
	cells = append(cells, r.notes())
	return "| " + strings.Join(cells, " | ") + " |"
}

// header is the first line of a run's output: the code, the parameters
// and where the runs go.
func header(commit string, ext external) string {
	return fmt.Sprintf("bench: commit %s; L=%v P=%d C=%v call=%s lead=%v; %s; %d cores, %s %s/%s",
		commit, *latency, *par, *freq, *mode, *lead, runsOn(ext), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// runsOn says where the runs go: on prism, as --prism and --robust_modes
// say, or on the job server ext.
func runsOn(ext external) string {
	if ext.Endpoint != "" {
		return "runner " + ext.label() + " (LOOPBACK; its CPU and memory not measured)"
	}
	return fmt.Sprintf("prism %s (robust: %s)", *prismMode, *robustModes)
}

// report is the JSON --json writes and --report reads.
type report struct {
	Commit  string         `json:"commit"`
	Started time.Time      `json:"started,omitzero"`
	Machine map[string]any `json:"machine"`
	Params  map[string]any `json:"params"`
	Rows    []row          `json:"rows"`
	Targets []targetJSON   `json:"targets"`
}

type targetJSON struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	Detail string `json:"detail"`
}

func writeJSON(path, commit string, started time.Time, rows []row, targets []target, ext external) error {
	doc := report{
		Commit:  commit,
		Started: started,
		Machine: map[string]any{"cores": runtime.NumCPU(), "go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH},
		Params: map[string]any{"latency_ms": latency.Milliseconds(), "p": *par, "c_ms": freq.Milliseconds(), "call": *mode,
			"lead_ms": lead.Milliseconds(), "runs_on": runsOn(ext), "args": strings.Join(os.Args[1:], " ")},
		Rows: rows,
	}
	for _, t := range targets {
		doc.Targets = append(doc.Targets, targetJSON{t.name, t.verdict(), t.detail})
	}
	// Compact: indented, the CPU time series of a whole run pass 1 MB, more
	// than a results file should weigh in the repository.
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// readReport reads a file --json wrote. Files from before a field existed
// read it as zero; the contender called floor then is timeronly now (the
// same code, renamed).
func readReport(path string) (report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return report{}, err
	}
	var doc report
	if err := json.Unmarshal(b, &doc); err != nil {
		return report{}, fmt.Errorf("%s: %w", path, err)
	}
	for i := range doc.Rows {
		if doc.Rows[i].Contender == "floor" {
			doc.Rows[i].Contender = "timeronly"
		}
	}
	return doc, nil
}

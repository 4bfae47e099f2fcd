package main

// The service suite (issue 21): the enrich job against its loopback service
// with a capacity, in real processes, with fixed parallelism 64, a rate
// limit and adaptive concurrency; the capacity dropping mid-run; a rate of
// 500 per worker and shared by two workers through Redis. Its figures come
// from the service's own counts per second (what it served, refused and
// saw arrive) and the job's summary line; the adaptive limit over time from
// the job's events.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg/vgimg"
)

// serviceRun is one job of the suite and what it printed.
type serviceRun struct {
	name, desc string
	args       []string
	events     string // --events file, for the limit over time

	out                                string
	in, ok, failed, calls, overloaded  int64
	limit                              int64
	wall                               time.Duration
	arrived, served, refused, windows5 []int64
	retries                            []int64 // calls with an attempt number above 1, per second
	err                                error
}

// The service's capacity and latency: its best throughput is
// capacity / latency = 1,200 calls a second.
const (
	svcCapacity = 24
	svcLatency  = 20 * time.Millisecond
	svcBest     = float64(svcCapacity) / 0.020
)

func runServiceSuite() error {
	dir, bin, err := buildEnrich("bench-service-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	capacity := []string{"--service_capacity=" + strconv.Itoa(svcCapacity), "--latency=" + svcLatency.String(), "--generate=30000", "--customers=20000"}
	runs := []*serviceRun{
		{name: "fixed64", desc: "fixed parallelism 64", args: append(capacity, "--concurrency=64")},
		{name: "rate1100", desc: "--rate_limit 1100, parallelism 64", args: append(capacity, "--concurrency=64", "--rate_limit=1100")},
		{name: "adaptive", desc: "--adaptive 1,64", args: append(capacity, "--adaptive=1,64"), events: filepath.Join(dir, "adaptive.jsonl")},
		{name: "drop", desc: "--adaptive 1,64, capacity 24 -> 12 at 15 s", args: append(capacity, "--adaptive=1,64", "--service_capacity_later=12", "--service_capacity_at=15s"),
			events: filepath.Join(dir, "drop.jsonl")},
		{name: "rate500", desc: "--rate_limit 500, no capacity", args: []string{"--latency=" + svcLatency.String(), "--generate=15000", "--customers=10000", "--rate_limit=500"}},
	}
	for _, r := range runs {
		args := append([]string{"--output", filepath.Join(dir, r.name)}, r.args...)
		if r.events != "" {
			args = append(args, "--events", r.events)
		}
		r.out, r.err = runEnrich(bin, args...)
		r.parse()
		fmt.Printf("   service %-9s %s\n", r.name, r.line())
	}
	shared := runShared(bin, dir)
	printServiceTable(append(runs, shared...))
	printServiceTargets(runs, shared)
	if *chartsDir != "" {
		file, err := limitChart(*chartsDir, runs)
		if err != nil {
			return err
		}
		fmt.Println("charts:", file)
	}
	return nil
}

// buildEnrich builds the enrich job into a new temporary directory (named
// from pattern), which the caller removes.
func buildEnrich(pattern string) (dir, bin string, err error) {
	if dir, err = os.MkdirTemp("", pattern); err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "enrich")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/asyncbeam/asyncbeam/pipelines/enrich").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("building the enrich job: %v\n%s", err, out)
	}
	return dir, bin, nil
}

// runEnrich runs the job and returns its output.
func runEnrich(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// runShared runs two jobs sharing a rate of 500 per second through Redis,
// both calling the first one's service, so that its counts are their sum.
func runShared(bin, dir string) []*serviceRun {
	addr := os.Getenv("ASYNCBEAM_REDIS")
	a := &serviceRun{name: "sharedA", desc: "--shared_rate_limit 500, worker A (its service counts both)"}
	b := &serviceRun{name: "sharedB", desc: "--shared_rate_limit 500, worker B"}
	if addr == "" {
		a.err = fmt.Errorf(`ASYNCBEAM_REDIS is not set: eval "$(integration/redis.sh start)"`)
		return []*serviceRun{a}
	}
	key := fmt.Sprintf("--rate_key=bench:%d", time.Now().UnixNano())
	common := []string{"--latency=" + svcLatency.String(), "--customers=10000", "--shared_rate_limit=500", "--redis=" + addr, key}
	cmdA := exec.Command(bin, append([]string{"--output", filepath.Join(dir, "sharedA"), "--generate=9000"}, common...)...)
	stdout, err := cmdA.StdoutPipe()
	if err != nil {
		a.err = err
		return []*serviceRun{a}
	}
	cmdA.Stderr = cmdA.Stdout
	if a.err = cmdA.Start(); a.err != nil {
		return []*serviceRun{a}
	}
	var outA strings.Builder
	url := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`service (http://\S+)`)
		sent := false
		for sc.Scan() {
			outA.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				url <- strings.TrimSuffix(m[1], ",")
				sent = true
			}
		}
		if !sent {
			close(url)
		}
		io.Copy(io.Discard, stdout)
	}()
	u, ok := <-url
	if ok {
		b.out, b.err = runEnrich(bin, append([]string{"--output", filepath.Join(dir, "sharedB"), "--generate=6000", "--service_url=" + u}, common...)...)
	} else {
		b.err = fmt.Errorf("worker A printed no service URL")
	}
	wg.Wait()
	a.err = cmdA.Wait()
	a.out = outA.String()
	a.parse()
	b.parse()
	fmt.Printf("   service %-9s %s\n   service %-9s %s\n", a.name, a.line(), b.name, b.line())
	return []*serviceRun{a, b}
}

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
		// Under overload: the seconds in which the service refused more
		// than 5% of what it answered (where the budget binds).
		var retries, firsts, secs int64
		for i := range r.arrived {
			answered := r.served[i] + r.refused[i]
			if i < len(r.retries) && answered > 0 && r.refused[i]*20 > answered {
				retries += r.retries[i]
				firsts += r.arrived[i] - r.retries[i]
				secs++
			}
		}
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

// limitChart draws the adaptive limit over time, from the jobs' events, and
// the calls served per second, for the adaptive runs.
func limitChart(dir string, runs []*serviceRun) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	limits := plot.New()
	limits.Title.Text = "adaptive concurrency limit"
	limits.X.Label.Text = "seconds since the job's first call"
	limits.Y.Label.Text = "limit"
	served := plot.New()
	served.Title.Text = fmt.Sprintf("calls served per second (capacity %d, L=%v)", svcCapacity, svcLatency)
	served.X.Label.Text = "seconds since the service started"
	served.Y.Label.Text = "calls/s"
	for i, r := range runs {
		if r.events == "" || r.err != nil {
			continue
		}
		pts, err := limitPoints(r.events)
		if err != nil {
			return "", err
		}
		if l, err := plotter.NewLine(pts); err == nil {
			l.Color = plotutil.Color(i)
			limits.Add(l)
			limits.Legend.Add(r.desc, l)
		}
		var sp plotter.XYs
		for s, v := range r.served {
			sp = append(sp, plotter.XY{X: float64(s) + 0.5, Y: float64(v)})
		}
		if l, err := plotter.NewLine(sp); err == nil {
			l.Color = plotutil.Color(i)
			served.Add(l)
			served.Legend.Add(r.desc, l)
		}
	}
	limits.Legend.Top, served.Legend.Top = true, true
	c := figure(fmt.Sprintf("service suite, %s", time.Now().UTC().Format("2006-01-02")), limits, served)
	file := filepath.Join(dir, "service.png")
	f, err := os.Create(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: c}.WriteTo(f)
	return file, err
}

// limitPoints reads the limit changes of an events file as a step line.
func limitPoints(path string) (plotter.XYs, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pts plotter.XYs
	var first time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Type  string    `json:"type"`
			Time  time.Time `json:"time"`
			Limit int       `json:"limit"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Type == "started" && first.IsZero() {
			first = e.Time
		}
		if e.Type != "limit_changed" {
			continue
		}
		if first.IsZero() {
			first = e.Time
		}
		x := e.Time.Sub(first).Seconds()
		if n := len(pts); n > 0 {
			pts = append(pts, plotter.XY{X: x, Y: pts[n-1].Y})
		}
		pts = append(pts, plotter.XY{X: x, Y: float64(e.Limit)})
	}
	return pts, sc.Err()
}

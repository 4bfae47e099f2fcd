package main

// Charts of the sweeps a user decides by: throughput and p99 against the
// offered rate, the share of the limit against the number of keys, and p99
// against the callback frequency.

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writeCharts draws every chart the run has rows for into dir, and returns
// the files written.
func writeCharts(dir, commit string, rows []row) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	caption := fmt.Sprintf("commit %s, %d cores, %s, L=%v, P=%d", commit, runtime.NumCPU(), runtime.Version(), rows[0].Latency, rows[0].P)
	if splitRuns(rows) {
		caption += "; worker and prism job server in processes of their own"
	}
	var written []string
	for _, c := range []struct {
		file string
		draw func(rows []row, caption string) (*vgimg.Canvas, bool)
	}{
		{"stream.png", streamChart},
		{"batch.png", batchChart},
		{"csweep.png", csweepChart},
	} {
		canvas, ok := c.draw(rows, caption)
		if !ok {
			continue
		}
		path := filepath.Join(dir, c.file)
		f, err := os.Create(path)
		if err != nil {
			return written, err
		}
		_, err = vgimg.PngCanvas{Canvas: canvas}.WriteTo(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}

// splitRuns reports whether the rows were measured with the runner in a
// process of its own (files written before have no runner figures).
func splitRuns(rows []row) bool {
	for _, r := range rows {
		for _, x := range r.Runs {
			if x.PeakRSSRunnerMB > 0 {
				return true
			}
		}
	}
	return false
}

// series is one contender's line: x and the median, min and max of y.
type series struct {
	name   string
	points plotter.XYs
	errs   plotter.YErrors
}

// collect gathers, per contender, the points of the rows that pass keep, at
// x(row) and the figure y.
func collect(rows []row, keep func(row) bool, x func(row) float64, y func(result) float64) []series {
	by := map[string]*series{}
	var names []string
	for _, r := range rows {
		if !r.ran() || !keep(r) {
			continue
		}
		s := by[r.Contender]
		if s == nil {
			s = &series{name: r.Contender}
			by[r.Contender] = s
			names = append(names, r.Contender)
		}
		st := r.stat(y)
		s.points = append(s.points, plotter.XY{X: x(r), Y: st.med})
		s.errs = append(s.errs, struct{ Low, High float64 }{st.med - st.lo, st.hi - st.med})
	}
	var out []series
	for _, n := range names {
		s := by[n]
		sort.Sort(byX{s.points, s.errs})
		out = append(out, *s)
	}
	return out
}

type byX struct {
	p plotter.XYs
	e plotter.YErrors
}

func (b byX) Len() int           { return len(b.p) }
func (b byX) Less(i, j int) bool { return b.p[i].X < b.p[j].X }
func (b byX) Swap(i, j int) {
	b.p[i], b.p[j] = b.p[j], b.p[i]
	b.e[i], b.e[j] = b.e[j], b.e[i]
}

// panel draws the series as lines with points and min-max bars.
func panel(title, xLabel, yLabel string, ss []series, logX bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, s := range ss {
		line, points, err := plotter.NewLinePoints(s.points)
		if err != nil {
			return nil, err
		}
		c := plotutil.Color(i)
		line.Color, points.Color = c, c
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		if bars, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{s.points, s.errs}); err == nil {
			bars.Color = c
			p.Add(bars)
		}
		p.Legend.Add(s.name, line, points)
	}
	return p, nil
}

// figure lays panels side by side, with the caption under them.
func figure(caption string, panels ...*plot.Plot) *vgimg.Canvas {
	const w, h = 7 * vg.Inch, 4 * vg.Inch
	c := vgimg.New(vg.Length(len(panels))*w, h+0.35*vg.Inch)
	dc := draw.New(c)
	top := draw.Crop(dc, 0, 0, 0.35*vg.Inch, 0)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	for i, p := range panels {
		p.Draw(tiles.At(top, i, 0))
	}
	font := plot.DefaultFont
	font.Size = 10
	sty := draw.TextStyle{Color: color.Gray{Y: 60}, Font: font, Handler: plot.DefaultTextHandler}
	dc.FillText(sty, vg.Point{X: vg.Inch / 4, Y: 0.1 * vg.Inch}, caption)
	return c
}

// streamChart: sustained throughput and p99 latency against the offered
// rate (the stream and overload suites, 100 keys, the global window).
// passthrough's line is the floor: what the runner alone allows.
func streamChart(rows []row, caption string) (*vgimg.Canvas, bool) {
	keep := func(r row) bool {
		return !r.Bounded && r.Keys == 100 && r.C == *freq && r.SlowEvery == 0 && r.window().Kind == "global" &&
			(r.Suite == "stream" || r.Suite == "overload")
	}
	rate := func(r row) float64 { return r.ratePerS() }
	tput := collect(rows, keep, rate, sustained)
	lat := collect(rows, keep, rate, p99)
	if len(tput) == 0 {
		return nil, false
	}
	a, err1 := panel("Sustained throughput (100 keys)", "offered rate (elements/s)", "outputs/s while the source runs", tput, false)
	b, err2 := panel("p99 latency (100 keys)", "offered rate (elements/s)", "p99 latency (ms)", lat, false)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	capacity := 0.0 // P/L of the rows drawn (one P and L per report)
	for _, r := range rows {
		if keep(r) {
			capacity = r.limitRate()
			break
		}
	}
	limit := plotter.NewFunction(func(x float64) float64 { return math.Min(x, capacity) })
	limit.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	limit.Color = color.Gray{Y: 120}
	a.Add(limit)
	a.Legend.Add("min(rate, P/L)", limit)
	return figure(caption+"; median of the runs, bars from min to max", a, b), true
}

// batchChart: share of the limit N x L / P against the number of keys, per
// input size, for the contenders that make calls (passthrough and
// timeronly make none: the limit does not bound them).
func batchChart(rows []row, caption string) (*vgimg.Canvas, bool) {
	var panels []*plot.Plot
	for _, n := range intList(*batchNs) {
		keep := func(r row) bool {
			return r.Suite == "batch" && r.N == n && r.Contender != "passthrough" && r.Contender != "timeronly" && r.Contender != "sync"
		}
		ss := collect(rows, keep, func(r row) float64 { return float64(r.Keys) }, ratio)
		if len(ss) == 0 {
			continue
		}
		p, err := panel(fmt.Sprintf("Bounded input, N = %d", n), "keys (log scale; N = one per element)", "share of the limit N × L / P", ss, true)
		if err != nil {
			return nil, false
		}
		p.Y.Min, p.Y.Max = 0, 1.05
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return nil, false
	}
	return figure(caption, panels...), true
}

// csweepChart: p99 latency and CPU (worker + runner) against the callback
// frequency, for async and timeronly (both commit on timers every C).
func csweepChart(rows []row, caption string) (*vgimg.Canvas, bool) {
	keep := func(r row) bool { return r.Suite == "csweep" }
	c := func(r row) float64 { return float64(r.C) / float64(time.Millisecond) }
	lat := collect(rows, keep, c, p99)
	cost := collect(rows, func(r row) bool { return keep(r) && r.runnerMeasured() }, c, cpu)
	if len(lat) == 0 {
		return nil, false
	}
	a, err := panel("p99 latency against C (0.8 × P/L, 100 keys)", "callback frequency C (ms, log scale)", "p99 latency (ms)", lat, true)
	if err != nil {
		return nil, false
	}
	caption += "; median of the runs, bars from min to max"
	if len(cost) == 0 { // the runner's CPU is not measured
		return figure(caption, a), true
	}
	b, err := panel("CPU (worker + runner) against C", "callback frequency C (ms, log scale)", "CPU s per 1,000 outputs", cost, true)
	if err != nil {
		return nil, false
	}
	return figure(caption, a, b), true
}

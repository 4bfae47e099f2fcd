package main

// The service suite's chart: the adaptive limit over time, from the jobs'
// events, beside the calls the service served per second.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg/vgimg"
)

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

package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sample is one output: when its element was created and when the output
// reached the sink (was committed), in Unix microseconds (16 bytes a sample:
// the memory check keeps 100,000 of them).
type sample struct{ createdUs, committedUs int64 }

func (s sample) created() time.Time   { return time.UnixMicro(s.createdUs) }
func (s sample) committed() time.Time { return time.UnixMicro(s.committedUs) }

// result is what one run measured.
type result struct {
	spec
	WallS float64 `json:"wall_s"`
	// Throughput is N / wall (for a source, the wall is at least its
	// duration); RatioToLimit is limitSeconds / wall.
	Throughput   float64 `json:"throughput"`
	RatioToLimit float64 `json:"ratio_to_limit"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	// Sustained (unbounded input) is the output rate while the source runs:
	// outputs committed from the first creation plus settle to the last
	// creation, per second of that window. A contender that keeps up, with
	// latencies below settle, shows the source rate.
	Sustained float64 `json:"sustained,omitempty"`
	// Backlog (unbounded input) is how many elements were not committed when
	// the source stopped, and Drain the rate at which they were committed
	// after (zero without a backlog).
	Backlog   int     `json:"backlog,omitempty"`
	Drain     float64 `json:"drain,omitempty"`
	CPUSPer1k float64 `json:"cpu_s_per_1k"`
	PeakRSSMB float64 `json:"peak_rss_mb"`
	// PeakHeld (async) is the most elements the transform's pool held at
	// once: the memory its options bound.
	PeakHeld int    `json:"peak_held,omitempty"`
	Note     string `json:"note,omitempty"`
}

// settle is how long after the source starts the sustained rate begins to
// count: the commit delay a contender may have by design.
func (s spec) settle() time.Duration { return s.C + 500*time.Millisecond }

// measure turns one run's samples into its result.
func measure(s spec, samples []sample, wall, cpu time.Duration, rssMB float64) result {
	r := result{spec: s, WallS: wall.Seconds(), CPUSPer1k: cpu.Seconds() / float64(s.elements()) * 1000, PeakRSSMB: rssMB}
	r.RatioToLimit = s.limitSeconds() / wall.Seconds()
	wallForRate := wall
	if !s.Bounded {
		wallForRate = max(wall, s.For)
	}
	r.Throughput = float64(s.elements()) / wallForRate.Seconds()
	if len(samples) == 0 {
		return r
	}
	lat := make([]float64, len(samples))
	first, last := samples[0].createdUs, samples[0].createdUs
	for i, x := range samples {
		lat[i] = float64(x.committedUs-x.createdUs) / 1000
		first, last = min(first, x.createdUs), max(last, x.createdUs)
	}
	sort.Float64s(lat)
	r.P50Ms, r.P99Ms = pct(lat, 0.50), pct(lat, 0.99)
	if s.Bounded {
		return r
	}
	from, to := first+s.settle().Microseconds(), last
	var lastCommit int64
	in := 0
	for _, x := range samples {
		if x.committedUs >= from && x.committedUs <= to {
			in++
		}
		if x.committedUs > to {
			r.Backlog++
		}
		lastCommit = max(lastCommit, x.committedUs)
	}
	if to > from {
		r.Sustained = float64(in) / (float64(to-from) / 1e6)
	}
	if r.Backlog > 0 && lastCommit > to {
		r.Drain = float64(r.Backlog) / (float64(lastCommit-to) / 1e6)
	}
	return r
}

func pct(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// readSamples reads "created_us committed_us" lines, as the python
// contender's sink writes them.
func readSamples(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []sample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		c, err1 := strconv.ParseInt(fields[0], 10, 64)
		d, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		out = append(out, sample{c, d})
	}
	return out, sc.Err()
}

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

// latencyFigures are the figures read from a run's samples.
type latencyFigures struct {
	p50Ms, p99Ms float64
	// sustained is the output rate while the source runs (stream only): the
	// outputs committed between the first creation plus settle and the last
	// creation, per second of that window. A contender that keeps up with
	// the source, with latencies below settle, shows the input rate; one
	// that falls behind shows less. Zero when the window is empty (batch,
	// where every element is created at once).
	sustained float64
}

func figures(samples []sample, settle time.Duration) latencyFigures {
	if len(samples) == 0 {
		return latencyFigures{}
	}
	lat := make([]float64, len(samples))
	first, last := samples[0].created(), samples[0].created()
	for i, s := range samples {
		lat[i] = float64(s.committedUs-s.createdUs) / 1000
		if s.created().Before(first) {
			first = s.created()
		}
		if s.created().After(last) {
			last = s.created()
		}
	}
	sort.Float64s(lat)
	f := latencyFigures{p50Ms: pct(lat, 0.50), p99Ms: pct(lat, 0.99)}
	from := first.Add(settle)
	if window := last.Sub(from); window > 0 {
		in := 0
		for _, s := range samples {
			if c := s.committed(); !c.Before(from) && !c.After(last) {
				in++
			}
		}
		f.sustained = float64(in) / window.Seconds()
	}
	return f
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

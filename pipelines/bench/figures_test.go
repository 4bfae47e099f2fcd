package main

import (
	"math"
	"testing"
)

// TestSustainedRate: outputs committed at a steady rate read that rate
// whether they come one by one or in rounds four times a second, at any
// phase of the rounds against the window, and a contender that falls
// behind reads the rate it commits at.
func TestSustainedRate(t *testing.T) {
	const sec = int64(1_000_000)
	steady := func(perS int, start, end int64) []int64 {
		var cs []int64
		for c := start; c < end; c += sec / int64(perS) {
			cs = append(cs, c)
		}
		return cs
	}
	rounds := func(perS, roundsPerS int, phase, start, end int64) []int64 {
		var cs []int64
		for c := start + phase; c < end; c += sec / int64(roundsPerS) {
			for range perS / roundsPerS {
				cs = append(cs, c)
			}
		}
		return cs
	}
	const from, to = 1_500_000, 5_000_000 // the stream suite's span at C = 1 s
	cases := []struct {
		name      string
		committed []int64
		to        int64
		want      float64
	}{
		{"steady", steady(2560, 0, 6*sec), to, 2560},
		{"steady, stops with the source", steady(2560, 0, to+1), to, 2560},
		// A 3.5 s span holds 14 rounds; counted over the span alone, one
		// round on each edge reads 15 and one just outside each 13.
		{"four rounds a second, a round on each edge", rounds(2560, 4, 0, 0, 6*sec), to, 2560},
		{"four rounds a second, a round just outside each edge", rounds(2560, 4, sec/4-1, 0, 6*sec), to - 2, 2560},
		{"four rounds a second, a round just inside each edge", rounds(2560, 4, 1, 0, 6*sec), to + 2, 2560},
		{"four rounds a second, mid-phase", rounds(2560, 4, sec/8, 0, 6*sec), to, 2560},
		{"falls behind at 0.8 of the rate", steady(2048, 0, 9*sec), to, 2048},
		{"nothing committed", nil, to, 0},
	}
	for _, c := range cases {
		got := sustainedRate(c.committed, from, c.to)
		if math.Abs(got-c.want) > 0.005*c.want+1 {
			t.Errorf("%s: sustainedRate = %.1f/s, want %.0f/s", c.name, got, c.want)
		}
	}
	for _, end := range []int64{sec / 2, sec} { // a span that ends before it starts, or where it starts
		if got := sustainedRate(steady(100, 0, 2*sec), sec, end); got != 0 {
			t.Errorf("span [%d, %d] µs: sustainedRate = %v, want 0", sec, end, got)
		}
	}
}

// TestSplitAtEnd: elements created in the source's last two seconds do not
// count in the p99 before its end, whatever their latency; the last round
// of keys (the source gives element i to key i % keys) counts as each key's
// last element.
func TestSplitAtEnd(t *testing.T) {
	// n elements, one each ms: element i created at i ms.
	outs := func(n int, latMs func(i int) int) []output {
		var out []output
		for i := range n {
			out = append(out, output{index: int32(i), createdUs: int64(i) * 1000, latencyUs: int32(latMs(i) * 1000)})
		}
		return out
	}
	const n = 10_000 // 10 s of elements
	for _, c := range []struct {
		name                  string
		keys                  int
		outs                  []output
		beforeEndP99, lastP50 float64
		lastShare             float64
	}{
		{"the last 2 s wait 2 s", 10, outs(n, func(i int) int {
			if i >= n-2000 {
				return 2000
			}
			return 100
		}), 100, 2000, 0.001},
		{"latency rising with creation", 100, outs(n, func(i int) int { return i / 10 }), 791, 995, 0.01},
		{"a key per element: all are last", n, outs(n, func(i int) int { return 7 }), 7, 7, 1},
		{"a source of under 2 s: nothing before its end", 1, outs(1000, func(i int) int { return 7 }), 0, 7, 0.001},
		{"no outputs", 5, nil, 0, 0, 0},
	} {
		b, l, share := splitAtEnd(c.keys, c.outs)
		if b != c.beforeEndP99 || l != c.lastP50 || math.Abs(share-c.lastShare) > 1e-9 {
			t.Errorf("%s: splitAtEnd = p99 before the end %v ms, last p50 %v ms, share %v; want %v, %v, %v", c.name, b, l, share, c.beforeEndP99, c.lastP50, c.lastShare)
		}
	}
}

package guard

import "time"

// counts is a sliding count of two numbers over the last n slices of width
// each: old slices fall out as time moves on. Not safe for concurrent use.
type counts struct {
	width time.Duration
	slot  []pair
	at    int64 // index (time / width) of the newest slice
	since int64 // UnixNano of the first add, or 0
}

type pair struct{ a, b float64 }

func newCounts(window time.Duration, n int) *counts {
	return &counts{width: max(window/time.Duration(n), time.Millisecond), slot: make([]pair, n)}
}

// advance drops the slices older than the window at now.
func (c *counts) advance(now time.Time) {
	idx := now.UnixNano() / int64(c.width)
	if idx <= c.at {
		return
	}
	n := int64(len(c.slot))
	for i := c.at + 1; i <= idx && i <= c.at+n; i++ {
		c.slot[i%n] = pair{}
	}
	c.at = idx
}

func (c *counts) add(now time.Time, a, b float64) {
	c.advance(now)
	if c.since == 0 {
		c.since = now.UnixNano()
	}
	p := &c.slot[c.at%int64(len(c.slot))]
	p.a += a
	p.b += b
}

func (c *counts) sum(now time.Time) (a, b float64) {
	c.advance(now)
	for _, p := range c.slot {
		a += p.a
		b += p.b
	}
	return a, b
}

// span is the time the sums at now cover: the window's full slices and the
// current one's elapsed part, or less since the first add. At least a
// millisecond, so that it can divide.
func (c *counts) span(now time.Time) time.Duration {
	c.advance(now)
	ns := now.UnixNano()
	d := time.Duration(int64(len(c.slot)-1)*int64(c.width) + ns - c.at*int64(c.width))
	if c.since != 0 {
		d = min(d, time.Duration(ns-c.since))
	}
	return max(d, time.Millisecond)
}

// busySpan is the part of span(now) whose slices counted something: the
// time the sums at now were gathered in, a lull left out.
func (c *counts) busySpan(now time.Time) time.Duration {
	c.advance(now)
	var d time.Duration
	n := int64(len(c.slot))
	for i := int64(0); i < n; i++ {
		if p := c.slot[i]; p.a == 0 && p.b == 0 {
			continue
		}
		if i == c.at%n {
			d += time.Duration(now.UnixNano() - c.at*int64(c.width))
		} else {
			d += c.width
		}
	}
	return max(min(d, c.span(now)), time.Millisecond)
}

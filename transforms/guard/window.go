package guard

import "time"

// counts is a sliding count of two numbers over the last n slices of width
// each: old slices fall out as time moves on. Not safe for concurrent use.
type counts struct {
	width time.Duration
	slot  []pair
	at    int64 // index (time / width) of the newest slice
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

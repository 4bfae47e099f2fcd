package main

import (
	"context"
	"sync"
)

// capacity is the loopback service's room: n calls served at once, as many
// more waiting in line (first come, first served), and no room past that.
// Its size can change while it serves.
type capacity struct {
	mu      sync.Mutex
	n       int
	serving int
	line    []chan struct{} // waiting calls, oldest first; closed when served
}

func newCapacity(n int) *capacity { return &capacity{n: n} }

// enter takes a place to be served, waiting in line if all are busy; it
// reports false at once when the line is full too, or when ctx ends while
// the call waits.
func (c *capacity) enter(ctx context.Context) bool {
	c.mu.Lock()
	if c.serving < c.n && len(c.line) == 0 {
		c.serving++
		c.mu.Unlock()
		return true
	}
	if c.serving+len(c.line) >= 2*c.n {
		c.mu.Unlock()
		return false
	}
	turn := make(chan struct{})
	c.line = append(c.line, turn)
	c.mu.Unlock()
	select {
	case <-turn:
		return true
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, w := range c.line {
			if w == turn {
				c.line = append(c.line[:i], c.line[i+1:]...)
				return false
			}
		}
		// Served meanwhile: give the place back.
		c.serving--
		c.admit()
		return false
	}
}

// leave gives a place back.
func (c *capacity) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serving--
	c.admit()
}

// resize changes how many calls are served at once (and may wait).
func (c *capacity) resize(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = n
	c.admit()
}

// admit serves waiting calls while there is room; c.mu is held.
func (c *capacity) admit() {
	for c.serving < c.n && len(c.line) > 0 {
		c.serving++
		close(c.line[0])
		c.line = c.line[1:]
	}
}

// size returns how many calls are served at once.
func (c *capacity) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

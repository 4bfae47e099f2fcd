package timers

import (
	"context"
	"sync"
	"time"
)

// Clock tells the current time. The transform reads processing time only
// through a Clock so that tests can control it.
type Clock interface {
	Now() time.Time
}

// System is the wall clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// Manual is a Clock that only moves when told to. The zero value reads as the
// zero time; it is safe for concurrent use.
type Manual struct {
	mu       sync.Mutex
	now      time.Time
	sleepers map[*sleeper]struct{}
}

type sleeper struct {
	until time.Time
	wake  chan struct{}
}

// NewManual returns a Manual clock that reads t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's current reading.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d and returns the new reading.
func (m *Manual) Advance(d time.Duration) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	for sl := range m.sleepers {
		if !sl.until.After(m.now) {
			close(sl.wake)
			delete(m.sleepers, sl)
		}
	}
	return m.now
}

// Sleep waits until the clock has moved d past its reading at the call, or
// ctx ends (then it returns ctx's error): a wait on this clock, for code
// that waits on its Clock (see guard.Config.Sleep).
func (m *Manual) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	m.mu.Lock()
	sl := &sleeper{until: m.now.Add(d), wake: make(chan struct{})}
	if m.sleepers == nil {
		m.sleepers = map[*sleeper]struct{}{}
	}
	m.sleepers[sl] = struct{}{}
	m.mu.Unlock()
	select {
	case <-sl.wake:
		return nil
	case <-ctx.Done():
		m.mu.Lock()
		delete(m.sleepers, sl)
		m.mu.Unlock()
		return ctx.Err()
	}
}

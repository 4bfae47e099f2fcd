package guard

import (
	"testing"
	"time"
)

// service is a closed-loop model of a service with a capacity: it serves
// capacity calls at once at its base latency, queues up to twice that (the
// latency grows with the queue) and refuses the rest for load.
type service struct {
	base     time.Duration
	capacity func(elapsed time.Duration) int
	timeout  time.Duration // > 0: every call times out at this latency
}

type round struct {
	at              time.Duration
	limit, sent     int
	served, refused int
}

// drive runs rounds of the model against a for d of fake time: each round
// fills the limit, and every call ends together.
func drive(a *Adaptive, s service, start time.Time, d time.Duration) []round {
	var out []round
	for el := time.Duration(0); el < d; {
		limit := a.Limit()
		n := 0
		for a.InFlight() < a.Limit() {
			a.Take()
			n++
		}
		c := s.capacity(el)
		served, refused := min(n, 2*c), max(0, n-2*c)
		lat := s.base * time.Duration(max(served, c)) / time.Duration(c)
		o := Succeeded
		if s.timeout > 0 {
			lat, o = s.timeout, TimedOut
		}
		el += lat
		now := start.Add(el)
		for i := 0; i < served; i++ {
			a.Release(now, lat, o)
		}
		for i := 0; i < refused; i++ {
			a.Release(now, time.Millisecond, Overload)
		}
		out = append(out, round{at: el, limit: limit, sent: n, served: served, refused: refused})
	}
	return out
}

// after summarizes the rounds from t on: the lowest and highest limit, and
// the share of calls refused.
func after(rs []round, t time.Duration) (lo, hi int, refusedShare float64) {
	lo, hi = 1<<30, 0
	var sent, refused int
	for _, r := range rs {
		if r.at < t {
			continue
		}
		lo, hi = min(lo, r.limit), max(hi, r.limit)
		sent += r.sent
		refused += r.refused
	}
	return lo, hi, float64(refused) / float64(max(sent, 1))
}

func TestAdaptiveSettlesAboveCapacity(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name     string
		min, max int
		capacity int
	}{
		{"capacity 24 from 1", 1, 64, 24},
		{"capacity 24 from 8", 8, 200, 24},
		{"capacity 4", 1, 64, 4},
		{"capacity 100", 1, 400, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAdaptive(tc.min, tc.max, start)
			rs := drive(a, service{base: 20 * time.Millisecond, capacity: func(time.Duration) int { return tc.capacity }}, start, 30*time.Second)
			lo, hi, refused := after(rs, 5*time.Second)
			// Settled: at or above capacity (the service is kept busy), at
			// most twice it (where the service starts refusing), and within a
			// narrow band.
			if lo < tc.capacity || hi > 2*tc.capacity {
				t.Errorf("limit after 5 s in [%d, %d]; want within [%d, %d]", lo, hi, tc.capacity, 2*tc.capacity)
			}
			if band := hi - lo; band > tc.capacity/2+2 {
				t.Errorf("limit after 5 s moved over %d (from %d to %d); want a band of at most %d", band, lo, hi, tc.capacity/2+2)
			}
			if refused > 0.01 {
				t.Errorf("refused share after 5 s = %.3f; want <= 0.01", refused)
			}
		})
	}
}

func TestAdaptiveFollowsACapacityDrop(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	a := NewAdaptive(1, 64, start)
	capacity := func(el time.Duration) int {
		if el < 15*time.Second {
			return 24
		}
		return 12
	}
	rs := drive(a, service{base: 20 * time.Millisecond, capacity: capacity}, start, 40*time.Second)
	lo, hi, _ := after(rs, 25*time.Second)
	if lo < 12 || hi >= 24 {
		t.Errorf("limit 10 s after the drop in [%d, %d]; want within [12, 24)", lo, hi)
	}
	if _, _, all := after(rs, 0); all > 0.02 {
		t.Errorf("refused share over the run = %.3f; want <= 0.02", all)
	}
}

func TestAdaptiveShrinksWhenEveryCallTimesOut(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	a := NewAdaptive(2, 64, start)
	// Grow it first against a healthy service.
	drive(a, service{base: 20 * time.Millisecond, capacity: func(time.Duration) int { return 40 }}, start, 10*time.Second)
	if got := a.Limit(); got < 40 {
		t.Fatalf("limit against capacity 40 = %d; want >= 40 before the timeouts", got)
	}
	rs := drive(a, service{base: 20 * time.Millisecond, capacity: func(time.Duration) int { return 40 }, timeout: time.Second}, start.Add(10*time.Second), 30*time.Second)
	if got := rs[len(rs)-1].limit; got != 2 {
		t.Errorf("limit after 30 s of timeouts at one latency = %d; want the minimum 2", got)
	}
}

func TestAdaptiveHoldsWhenTheCallerSendsLittle(t *testing.T) {
	// An application that never fills the limit gives no reason to grow it.
	start := time.Unix(1_000_000, 0)
	a := NewAdaptive(10, 100, start)
	now := start
	for i := 0; i < 1000; i++ {
		a.Take()
		now = now.Add(20 * time.Millisecond)
		a.Release(now, 20*time.Millisecond, Succeeded)
	}
	if got := a.Limit(); got != 10 {
		t.Errorf("limit after 1,000 lone calls = %d; want 10 (unchanged)", got)
	}
}

package guard

import (
	"math"
	"sync"
	"time"
)

// Adaptive is a concurrency limit that moves between a minimum and a maximum
// from what the service shows, in the manner of TCP Vegas as Netflix's
// concurrency-limits applies it to calls:
//
//   - The baseline is the lowest mean latency of successful calls seen in
//     one window: the service's latency without a queue. Means of windows,
//     not single calls, so that one unusually fast answer (a cached one)
//     does not make every later call look queued.
//   - Once per window (100 ms, or two baselines if longer) the limit
//     estimates the calls queued at the service as concurrency x (1 -
//     baseline / mean latency). Below alpha = 3 x max(1, log10(limit)) the
//     limit grows by alpha, if the window used most of it; above beta =
//     2 x alpha it shrinks by max(1, log10(limit)); between them it holds.
//     So it settles a few calls above the service's capacity, where
//     latency has just begun to grow, rather than oscillating around it.
//   - An overload answer or a timeout shrinks the limit to 0.8 of itself at
//     once, and any more in the next window at its end. Timeouts are never read as latency: when every call
//     times out at the same deadline, a latency rule would see a steady
//     latency and grow the limit to its maximum.
//
// The baseline is kept for the life of the limiter (a worker process): a
// service that becomes lastingly slower is read as queued, and gets a lower
// limit, until the worker restarts.
type Adaptive struct {
	min, max int

	mu       sync.Mutex
	limit    float64
	inFlight int
	baseline time.Duration
	win      window
}

// window gathers one window's samples.
type window struct {
	start time.Time
	sum   time.Duration
	n     int
	drop  bool
	peak  int
	// early: the window began with a shrink for a drop, so its own drops
	// wait for its end.
	early bool
}

// WindowMin is the shortest window of the adaptive limit.
const WindowMin = 100 * time.Millisecond

// NewAdaptive returns a limit starting at min, between min and max (1 <= min
// <= max).
func NewAdaptive(min, max int, now time.Time) *Adaptive {
	return &Adaptive{min: min, max: max, limit: float64(min), win: window{start: now}}
}

// Limit returns the current limit.
func (a *Adaptive) Limit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.limit)
}

// InFlight returns how many calls taken are not yet released.
func (a *Adaptive) InFlight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inFlight
}

// Take counts a call that starts. The limit is not enforced here: whoever
// runs the calls keeps at most Limit of them running (the pool sizes its
// slots to it, see state.Gate), so that waiting calls keep their order.
func (a *Adaptive) Take() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight++
	a.win.peak = max(a.win.peak, a.inFlight)
}

// Release counts a call taken by Take that ended, with how it went: its
// latency and outcome at now. It returns the whole-number limit before and
// after.
func (a *Adaptive) Release(now time.Time, latency time.Duration, o Outcome) (from, to int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight--
	switch o {
	case Succeeded:
		a.win.sum += latency
		a.win.n++
	case TimedOut, Overload:
		a.win.drop = true
	}
	from = int(a.limit)
	switch {
	case (o == TimedOut || o == Overload) && !a.win.early:
		// A drop shrinks the limit at once and starts a new window:
		// refusals come back fast (a refused call takes no time), so
		// waiting for the window's end would let a pool over the
		// service's capacity send hundreds more. Drops in that new
		// window shrink it again at its end.
		a.update()
		a.win = window{start: now, peak: a.inFlight, early: true}
	case now.Sub(a.win.start) >= max(WindowMin, 2*a.baseline):
		// A window that ended with drops shrank the limit just now: the
		// next one's drops (of calls sent before) wait for its end too.
		dropped := a.win.drop
		a.update()
		a.win = window{start: now, peak: a.inFlight, early: dropped}
	}
	return from, int(a.limit)
}

// update moves the limit at the end of a window; a.mu is held.
func (a *Adaptive) update() {
	lg := math.Max(1, math.Log10(a.limit))
	alpha, beta := 3*lg, 6*lg
	switch {
	case a.win.drop:
		a.limit *= 0.8
	case a.win.n > 0:
		mean := a.win.sum / time.Duration(a.win.n)
		if a.baseline == 0 || mean < a.baseline {
			a.baseline = mean
		}
		used := math.Min(a.limit, float64(a.win.peak))
		queue := used * (1 - float64(a.baseline)/float64(mean))
		switch {
		case queue > beta:
			a.limit -= lg
		case queue < alpha && used >= 0.8*a.limit:
			a.limit += alpha
		}
	}
	a.limit = math.Min(math.Max(a.limit, float64(a.min)), float64(a.max))
}

// Baseline returns the latency the limit takes for an unqueued service, or
// zero before the first window.
func (a *Adaptive) Baseline() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.baseline
}

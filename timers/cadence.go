package timers

import "time"

// minRearm is the least time ahead a commit timer aims at before it is
// rounded up to the grid. Below it a runner spends more time delivering
// timers than the pool gains from them.
const minRearm = 10 * time.Millisecond

// Cadence holds every duration the transform derives from its callback
// frequency C (async.WithCallbackFrequency). Nothing else in the module
// derives a duration from C: a rule that needs one adds it here.
type Cadence struct {
	// Frequency is C itself.
	Frequency time.Duration
	// Grid is the step of the commit grid, max(C/4, minRearm): every
	// commit timer is set on a multiple of it since the Unix epoch, so
	// that keys share instants and the runner delivers their callbacks
	// together, in one bundle.
	Grid time.Duration
	// busyWithin is how close a key's elements must come for the key to
	// count as busy: two grid steps, at least 500 ms and at most 2 s. A
	// busy key is committed by its own next bundle, where a timer would
	// only fall due inside that bundle; a key whose elements come further
	// apart is committed sooner by a timer on the grid than by waiting for
	// its next element. The floor keeps a key with elements a few hundred
	// milliseconds apart busy at a short C, where a timer per element costs
	// the runner more than the key's own bundles. Where the runner's guard
	// (Runner.Guard) is longer, it is the threshold (busy).
	busyWithin time.Duration
	// BackstopFloor and backstopCap bound a busy key's backstop as its
	// elements' pace sets it: max(C/2, 250 ms) and max(2 s, C/2). The
	// runner's pace (Runner.Guard) may push a backstop past the cap.
	BackstopFloor, backstopCap time.Duration
	// longCallCap is the most a key whose every element is in a long call
	// waits between looks, C.
	longCallCap time.Duration
	// StaleAfter is how long a key may go without a callback on a worker
	// before the worker drops its work, max(20C, 30 s): only a key that
	// moved to another worker stays away that long.
	StaleAfter time.Duration
	// Gone is how long a key may go without a callback on a worker before
	// the worker takes it for moved to another worker for good, 10 ×
	// StaleAfter: then an ordered key's unbuffered task goes even when no
	// key needs room (eviction for room takes it after StaleAfter), and
	// a key that came back after an eviction is spared from eviction for
	// twice as long as it was away, at most this long.
	Gone time.Duration
	// Forget is how long a worker remembers a key that holds no work
	// there (its arrivals, see busyWithin), max(4C, 4 s).
	Forget time.Duration
	// FirstLead is the least time ahead of a timer set at an element
	// before any bundle of the worker has ended (Plan): twice busyWithin,
	// at most backstopCap.
	FirstLead time.Duration
	// GuardCap bounds the runner's guard (Runner.Guard), StaleAfter/2: a
	// guard that long already means the runner is far behind, and the
	// key's callbacks must come within StaleAfter, or its work is dropped.
	GuardCap time.Duration
}

// NewCadence returns the cadence of callback frequency c, which must be
// positive.
func NewCadence(c time.Duration) Cadence {
	if c <= 0 {
		panic("timers: NewCadence needs a positive callback frequency")
	}
	grid := max(c/4, minRearm)
	busy := min(max(2*grid, 500*time.Millisecond), 2*time.Second)
	floor := max(c/2, 250*time.Millisecond)
	stale := max(20*c, 30*time.Second)
	cad := Cadence{
		Frequency:     c,
		Grid:          grid,
		busyWithin:    busy,
		BackstopFloor: floor,
		backstopCap:   max(2*time.Second, floor),
		longCallCap:   c,
		StaleAfter:    stale,
		Gone:          10 * stale,
		Forget:        max(4*c, 4*time.Second),
		GuardCap:      stale / 2,
	}
	cad.FirstLead = min(2*busy, cad.backstopCap)
	return cad
}

// OnGrid returns the first instant of the commit grid strictly after t.
func (c Cadence) OnGrid(t time.Time) time.Time { return NextRound(t, c.Grid, 0) }

// step is the step of the grid that a key's timer is set on while
// the runner's bundles last r.bundle: the commit grid's step, doubled
// while it is shorter than a bundle, at most C. Every instant of the grid
// is one timer bundle for the runner (prism delivers a grid instant's
// timers together), and timers closer together than a bundle lasts are
// not committed any sooner: they wait for the bundle before them. Steps
// are the grid's step times a power of two, so instants of every step are
// instants of the grid, and keys planned with different steps still
// share them.
func (c Cadence) step(r Runner) time.Duration {
	step := c.Grid
	for step < r.bundle && 2*step <= c.Frequency {
		step *= 2
	}
	return step
}

// NextRound returns the earliest instant strictly after now that lies on a
// round increment of step (counted from the Unix epoch) plus phase. Every
// call within the same step returns the same instant: timers aimed anywhere
// in one step of the grid share its end, and the runner delivers them
// together. step must be positive.
func NextRound(now time.Time, step, phase time.Duration) time.Time {
	if step <= 0 {
		panic("timers: NextRound needs a positive step")
	}
	phase %= step
	since := now.UnixNano() - int64(phase)
	rounds := since / int64(step)
	if since < 0 && since%int64(step) != 0 {
		rounds-- // floor, not truncation, before the epoch
	}
	return time.Unix(0, (rounds+1)*int64(step)+int64(phase))
}

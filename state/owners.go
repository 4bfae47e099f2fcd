package state

import "time"

// The pool's owners (keys or bundles): when each was last seen, its
// arrivals, and when an idle one is forgotten.

// owner is the set of tasks one owner holds, when it last showed it is
// alive (see Touch and EvictIdle), and when its elements came.
type owner struct {
	tasks      map[ElementID]*Task
	lastActive time.Time
	arrivals   Arrivals
	// lost: EvictIdle took work of the owner since its last touch; spared:
	// the owner came back after that, and EvictIdle spares its work until
	// it goes untouched for twice as long as it was away then, at most
	// Config.Gone (spareFor).
	lost, spared bool
	spareFor     time.Duration
}

// idle reports whether EvictIdle takes the owner's work at now: it was not
// touched since cutoff, nor, if it is spared, for its spareFor.
func (own *owner) idle(cutoff, now time.Time) bool {
	return own.lastActive.Before(cutoff) && (!own.spared || now.Sub(own.lastActive) > own.spareFor)
}

// spare marks an owner that EvictIdle took work from and that was touched
// again at now after being away since lastActive: its work is spared while
// its touches come at most twice that far apart (at most gone), so that a
// key whose callbacks come late does not lose its call to every eviction,
// and one that moved away for good frees its places after a wait set by
// its own lateness, not by the longest a runner may lag.
func (own *owner) spare(now time.Time, gone time.Duration) {
	own.lost, own.spared = false, true
	own.spareFor = min(2*now.Sub(own.lastActive), gone)
}

// Arrivals is what a pool remembers of when an owner's elements came: at
// most one arrival per Touch, so for a key touched once per bundle, when
// the bundles that brought its elements ran.
type Arrivals struct {
	// Last is when the owner's latest element came (zero: none remembered).
	Last time.Time
	// Gaps is how many gaps between elements the figures below are made
	// of: while it is zero they mean nothing.
	Gaps int
	// Gap is the time between its latest two elements, and MeanGap the mean
	// time between its elements, each new gap weighing a quarter (an
	// exponential moving average).
	//
	// A runner under load hands a key's elements over in bursts, leaving
	// gaps far shorter and far longer than the key's rate: MeanGap is the
	// rate, Gap says whether the key just changed pace.
	Gap, MeanGap time.Duration
}

// Arrive records an element at now.
func (a *Arrivals) Arrive(now time.Time) {
	if !a.Last.IsZero() {
		a.Gap = now.Sub(a.Last)
		if a.Gaps == 0 {
			a.MeanGap = a.Gap
		} else {
			a.MeanGap += (a.Gap - a.MeanGap) / 4
		}
		a.Gaps++
	}
	a.Last = now
}

// Touch records that owner o is alive: its key was called back on this
// worker, or its bundle is still running; element says the callback brought
// an element. It returns the owner's arrivals before this touch, and after
// it (the same, unless element). Owners whose tasks are not touched for a
// while are evicted by EvictIdle; an owner without tasks is remembered for
// Config.Forget after its last touch.
func (p *Pool) Touch(o string, element bool) (before, after Arrivals) {
	now := p.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgetIdle(now)
	own := p.owners[o]
	if own == nil {
		own = &owner{tasks: map[ElementID]*Task{}}
		p.owners[o] = own
	}
	if own.lost { // alive after all, only late: see EvictIdle
		own.spare(now, p.cfg.Gone)
	}
	before, own.lastActive = own.arrivals, now
	if element {
		own.arrivals.Arrive(now)
	}
	return before, own.arrivals
}

// forgetIdle drops, at most once a second, the owners that hold no task, do
// not wait for room (see Waiting) and were not touched for Config.Forget, or
// for Config.Gone if EvictIdle took their work; p.mu is held.
func (p *Pool) forgetIdle(now time.Time) {
	if now.Sub(p.swept) < time.Second {
		return
	}
	p.swept = now
	for o, own := range p.owners {
		if len(own.tasks) > 0 || p.room.has(o) {
			continue
		}
		forget := p.cfg.Forget
		if own.lost {
			forget = max(forget, p.cfg.Gone)
		}
		if now.Sub(own.lastActive) > forget {
			delete(p.owners, o)
		}
	}
}

package timers

import (
	"math"
	"sync"
	"time"
)

// Runner is the runner's pace as a worker has seen it lately.
type Runner struct {
	// overrun is how long after a timer was set its key was still in a
	// bundle, when that bundle ended past the timer's instant: a decaying
	// maximum over the keys where that happened (see Pace), zero when it
	// did not lately. A runner does not fire a timer while its key is in a
	// bundle; prism v2.77 puts it back in a loop, and every such timer
	// costs it CPU that the bundles need, so bundles last longer, and more
	// timers fall due inside them.
	overrun time.Duration
	// bundle is how long the transform's bundles on this worker have
	// lately lasted, from StartBundle to FinishBundle: a moving mean,
	// each bundle weighing an eighth (zero before one has ended). It sets
	// the step of keys' timers (Cadence.step). (The overrun's decay
	// reads the same durations weighted by their lengths: see Pace.)
	bundle time.Duration
	// longest is how long the transform's longest recent bundle on this
	// worker lasted: a decaying maximum of bundle durations, as overrun
	// is of overruns (zero before one has ended). A runner hands a stage
	// all its waiting elements in one bundle, so under a backlog the
	// next bundle lasts about as long as the last (Cadence.nextBundle).
	longest time.Duration
	// ended says a bundle of the transform has ended on this worker since
	// Since: until then nothing tells how long its bundles last
	// (Cadence.FirstLead).
	ended bool
	// busyShare is the share of elements of keys the worker had seen
	// before that came as a busy key's (Cadence.busy): a moving share,
	// each element weighing a sixty-fourth; returned says there was one
	// since Since. It tells whether a key the worker has not seen yet is
	// likely one whose next element comes soon (Cadence.Plan).
	busyShare float64
	returned  bool
	// Since is when the worker began setting timers without a pause of
	// Cadence.Forget (zero: none yet): when its stream started, or resumed
	// after its keys' arrivals were forgotten. Until it has set timers for
	// Forget since then, a key it has not seen may simply not have come
	// yet (Cadence.newcomer).
	Since time.Time
}

// Guard is the least time ahead a key's timer may be set: twice the
// overrun, at most c.GuardCap. It is zero while no timer has lately fallen
// due inside its key's bundle: the planner then keeps to its own rules.
//
// Twice, because the runner's loop feeds on itself: the timers set before
// the overrun was seen still fall due inside bundles, each costs the runner
// CPU, and so bundles grow while the guard moves timers out. A guard that
// only matched the last overrun would chase the loop and never leave it.
func (r Runner) Guard(c Cadence) time.Duration {
	return min(2*r.overrun, c.GuardCap)
}

// Plan is a timer as a worker set it: its instant and when it was set.
type Plan struct {
	At, Set time.Time
}

// Pace records, for one transform on one worker, the timers its keys set
// and whether the key's bundles kept them from firing, how long its
// bundles last, and whether keys that come back come busy (Returned), and
// reads the result as a Runner. Its overrun, like its longest bundle, is a
// decaying maximum: a new sample above
// it replaces it, and it halves for every four lengths of the bundle in
// progress at a random instant (bundle durations weighted by their
// durations, so that a run of tiny timer bundles does not hide a few long
// ones) that pass without one, or four of its own lengths if those are
// shorter. So a runner that slows is followed at once; while its bundles
// stay long the guard wears off slowly (a timer set nearer would fall due
// inside one), and once they are short again it is gone within a few
// dozen of them, at any callback frequency. The zero value is ready to
// use; a Pace is safe for concurrent use.
type Pace struct {
	mu        sync.Mutex
	overrun   decaying
	longest   decaying        // bundle durations: Runner.longest
	spans     spans           // bundle durations: Runner.bundle, and the overrun's beat
	plans     map[string]Plan // key -> its timer in force, as this worker set it
	swept     time.Time
	since     time.Time // see Runner.Since
	ended     bool      // see Runner.ended
	busyShare float64   // see Runner.busyShare
	returned  bool      // see Runner.returned
	last      time.Time // when Planned was last called
}

// Planned records that key's timer was set at now for at, under cadence c.
// A plan that neither fired nor was replaced is kept until c.StaleAfter
// past its instant: by then the key has moved to another worker.
func (p *Pace) Planned(key string, at, now time.Time, c Cadence) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planned(key, at, now, c)
}

// Plan plans key's timer from f (Cadence.Plan) with the Runner as of f.Now
// (the caller's f.Runner is not read), and records it as Planned does. An
// element of a key the worker had seen (f.Seen) is recorded as Returned
// first, from the same reading of the key: one lock for the three steps.
func (p *Pace) Plan(c Cadence, key string, f Facts) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	f.Runner = p.runner(f.Now)
	busy := c.busy(f)
	if f.AtElement && !f.Seen.IsZero() {
		p.noteReturn(busy)
	}
	at := c.plan(f, busy)
	p.planned(key, at, f.Now, c)
	return at
}

func (p *Pace) planned(key string, at, now time.Time, c Cadence) {
	if p.plans == nil {
		p.plans = map[string]Plan{}
	}
	p.plans[key] = Plan{At: at, Set: now}
	switch {
	case p.since.IsZero():
		p.since = now
	case now.Sub(p.last) > c.Forget:
		// A stream that resumes after a pause: what the worker learnt of
		// its bundles and keys before tells nothing now.
		p.since, p.ended, p.returned = now, false, false
	}
	p.last = now
	if now.Sub(p.swept) >= c.StaleAfter {
		p.swept = now
		for k, pl := range p.plans {
			if now.Sub(pl.At) > c.StaleAfter {
				delete(p.plans, k)
			}
		}
	}
}

// Returned records an element of a key the worker had seen before, and
// whether it came as a busy key's (Cadence.busy). Plan does it too.
func (p *Pace) Returned(busy bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteReturn(busy)
}

func (p *Pace) noteReturn(busy bool) {
	x := 0.0
	if busy {
		x = 1
	}
	if !p.returned {
		p.busyShare, p.returned = x, true
		return
	}
	p.busyShare += (x - p.busyShare) / 64
}

// InForce returns the plan of key's timer that Planned last recorded, and
// whether there is one: the caller takes it at the key's first touch in a
// bundle, before setting another, and hands it to BundleEnded.
func (p *Pace) InForce(key string) (Plan, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pl, ok := p.plans[key]
	return pl, ok
}

// Drop forgets key's plan: its timer fired, or it holds nothing and sets
// no timer.
func (p *Pace) Drop(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.plans, key)
}

// BundleEnded records a bundle that began at began and ended at now (its
// duration enters Runner.bundle and Runner.longest, and Runner.ended is
// set, unless began is zero), with
// the plans that were in force for its keys when it touched them (see
// InForce). Each plan due before now could not fire while its key was in
// the bundle, and is an overrun of now minus when it was set, counted as
// at most most (Cadence.GuardCap/2, the overrun that already sets the
// guard's cap).
//
// A plan due more than most before the bundle began is stale, not a
// deferral, and is not counted: its timer fired elsewhere (the key moved)
// or was replaced by a bundle that failed, and one such sample on a healthy
// runner would hold every key's guard at its cap for many times its
// length. The horizon is measured from the bundle's start, not its end, so
// that a bundle that itself lasts longer than most, the deepest case of
// the loop the guard is for, still counts its keys' timers.
func (p *Pace) BundleEnded(began, now time.Time, inForce []Plan, most time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	beat := p.spans.beat()
	p.overrun.fold(now, beat) // the time since the last bundle passed at the beat as it was
	p.longest.fold(now, beat)
	switch d := now.Sub(began); {
	case began.IsZero() || d < 0:
		began = now // unknown: no duration, and staleness from the bundle's end
	default:
		p.spans.add(d)
		p.longest.observe(now, d)
		p.ended = true
	}
	for _, pl := range inForce {
		if !pl.At.Before(now) || pl.Set.IsZero() || began.Sub(pl.At) > most {
			continue
		}
		p.overrun.observe(now, min(now.Sub(pl.Set), most))
	}
}

// Runner returns the runner's pace as of now.
func (p *Pace) Runner(now time.Time) Runner {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runner(now)
}

func (p *Pace) runner(now time.Time) Runner {
	beat := p.spans.beat()
	return Runner{overrun: p.overrun.at(now, beat), bundle: p.spans.mean(), longest: p.longest.at(now, beat), ended: p.ended, busyShare: p.busyShare, returned: p.returned, Since: p.since}
}

// decaying is a maximum that halves for every four beats that pass without
// a sample above it. A beat is the length of the bundle in progress at a
// random instant, as the reader measures it (spans), or the sample's own
// length if that is shorter, or while the reader has no measure. The decay
// is folded into value at every bundle's end (fold), so a beat that
// changes later does not rewrite what has already worn off.
type decaying struct {
	value time.Duration // at since
	peak  time.Duration // the sample value last started from: the beat's bound
	since time.Time
}

func (d *decaying) observe(now time.Time, v time.Duration) {
	if v >= d.value { // value was folded up to now by the caller
		d.value, d.peak, d.since = v, v, now
	}
}

// fold brings value up to now at the given beat.
func (d *decaying) fold(now time.Time, beat time.Duration) {
	if now.After(d.since) {
		d.value, d.since = d.at(now, beat), now
	}
}

func (d *decaying) at(now time.Time, beat time.Duration) time.Duration {
	if d.value <= 0 {
		return 0
	}
	elapsed := now.Sub(d.since)
	if elapsed <= 0 {
		return d.value
	}
	period := d.peak
	if beat > 0 {
		period = min(period, beat)
	}
	halves := float64(elapsed) / float64(4*period)
	if halves > 16 { // under a hundred-thousandth of it: gone
		return 0
	}
	return time.Duration(float64(d.value) * math.Exp2(-halves))
}

// spans keeps two moving means of bundle durations, in which a bundle
// weighs an eighth: of the durations (Runner.bundle) and of their squares.
// Their ratio is the mean weighted by duration: how long the bundle in
// progress at a random instant lasts. A plain mean would count a run of
// tiny timer bundles as a quick runner while a few long bundles, where
// timers fall due, take most of the time.
type spans struct {
	sum, squares float64 // in nanoseconds and nanoseconds squared
}

func (s *spans) add(d time.Duration) {
	x := float64(d)
	if s.sum == 0 && s.squares == 0 {
		s.sum, s.squares = x, x*x
		return
	}
	s.sum += (x - s.sum) / 8
	s.squares += (x*x - s.squares) / 8
}

// mean is the moving mean of the durations, zero before one has ended.
func (s *spans) mean() time.Duration { return time.Duration(math.Round(s.sum)) }

// beat is the mean weighted by duration, zero before a bundle of positive
// length has ended.
func (s *spans) beat() time.Duration {
	if s.sum <= 0 {
		return 0
	}
	return time.Duration(math.Round(s.squares / s.sum))
}

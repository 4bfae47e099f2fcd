package timers

import "time"

// Facts is what the planner knows when a key's callback ends: what the key
// holds, what the pool it shares is doing, and what the runner has been
// seen to do. Every field is measured; none is a setting.
type Facts struct {
	// Now is the callback's time.
	Now time.Time
	// AtElement says the callback is a ProcessElement (false: a timer).
	AtElement bool

	// Seen is when the key last received an element on this worker before
	// this bundle (zero: not while it had work here). Gaps, Gap and
	// MeanGap describe the gaps between its elements' bundles: their
	// count (the other two mean nothing while it is zero), the latest one
	// and their moving mean.
	Seen         time.Time
	Gaps         int
	Gap, MeanGap time.Duration

	// Active is how many of the key's elements the callback must come back
	// for: started or queued for room, not waiting out a retry's backoff,
	// not finished and held back behind an earlier element (WithOrdered).
	// Queued is how many of them wait for room, and Running how many are in
	// a call that has run for at least ShortestRun.
	Active, Queued, Running int
	ShortestRun             time.Duration
	// RetryDue is when the key's earliest retry is due (zero: none).
	RetryDue time.Time

	// Pool is the load of the pool the key's work runs in.
	Pool Load
	// Runner is the runner's pace as this worker has seen it.
	Runner Runner
	// BundleAge is how long the callback's bundle has run so far.
	BundleAge time.Duration
}

// Load is what the planner reads of the shared pool.
type Load struct {
	// Expected is the moving mean of a call's duration (zero: none has
	// finished yet).
	Expected time.Duration
	// Unfinished is how many tasks are started and not finished; Held how
	// many the pool holds, finished or not, and Capacity how many it may
	// hold (WithMaxItemsHeld; zero: unbounded).
	Unfinished, Held, Capacity int
	// PerWave is how many elements the pool runs at once: the parallelism,
	// times the batch size with BatchParDo.
	PerWave int
}

// busy reports whether the key's next element is expected before its
// timer would fire, so that its own next bundle commits it: its elements
// come within c.busyWithin, or within the runner's guard (Runner.Guard) or
// the key's next bundle (nextBundle) if those are longer (a timer set
// nearer than the guard is one the runner has lately had to put back; a
// key with elements that far apart is in its next bundle). At an element,
// the time since the key's previous one is under that; at a timer, the gap
// between its latest two is, and the latest came under it ago. A quiet
// key's timer that finds its work still running is so not taken for a
// busy one because of the element that set it.
func (c Cadence) busy(f Facts) bool {
	if f.Seen.IsZero() {
		return false
	}
	within := max(c.busyWithin, f.Runner.Guard(c), c.nextBundle(f))
	since := f.Now.Sub(f.Seen)
	if f.AtElement {
		return since < within
	}
	return f.Gaps > 0 && f.Gap < within && since < within
}

// newcomer reports whether the callback is an element of a key with no
// earlier one on this worker (Seen zero), with no element waiting for room
// and no retry due, while the worker has set timers for less than c.Forget
// (Runner.Since): Plan sets its timer as a busy key's. Until a key's second
// element nothing tells a busy key from a quiet one, and at a stream's
// start every key comes as a newcomer; a timer a grid step ahead for each
// fires in small timer bundles between the first ticks' element bundles,
// splitting them, and falls due inside the key's next bundle, where prism
// puts it back in a loop. Later, a
// key the worker has not seen is one whose elements come further apart
// than c.Forget: a quiet key, and planned as one.
//
// The rule holds only at a short C, where the backstop's floor is shorter
// than the busy threshold (C < 1 s): a key that turns out busy then sends
// its next element after its timer has come, not before. At a longer C
// the floor (C/2) is as long as a busy key's gap, so over many keys,
// where nearly every element is a newcomer, each key's timer fell among
// its later elements' bundles, and the runner's guard (Runner.Guard) grows
// until the stream falls behind.
// It holds, too, only while the pool holds less than half the places it
// may hold (Load.Capacity): a backstop keeps the newcomer's result, and
// its place, waiting.
func (c Cadence) newcomer(f Facts) bool {
	young := f.Runner.Since.IsZero() || f.Now.Sub(f.Runner.Since) < c.Forget
	roomy := f.Pool.Capacity == 0 || 2*f.Pool.Held < f.Pool.Capacity
	short := c.BackstopFloor < c.busyWithin
	return f.AtElement && f.Seen.IsZero() && f.Queued == 0 && f.RetryDue.IsZero() && young && roomy && short
}

// backstop is how far ahead a busy key's timer is set from the pace of its
// elements: three mean gaps between its bundles, within [BackstopFloor,
// backstopCap]. Its bundles commit it; the backstop must fall beyond the
// next one, and a runner under load hands a key's elements over in bursts,
// one bundle after several gaps: hence the mean, not the latest gap, and
// three of them.
func (c Cadence) backstop(meanGap time.Duration) time.Duration {
	return min(max(c.BackstopFloor, 3*meanGap), c.backstopCap)
}

// bundleLength is how long the worker's bundles last, as far as it can
// tell: the longer of the callback's bundle so far (Facts.BundleAge) and
// the longest recent one (Runner.longest), at most a quarter of
// c.GuardCap.
func (c Cadence) bundleLength(f Facts) time.Duration {
	return min(max(f.BundleAge, f.Runner.longest), c.GuardCap/4)
}

// nextBundle is how far ahead a busy key's timer must be for its next
// bundle to have ended by then: four bundle lengths (bundleLength), at
// most c.GuardCap. A runner hands a stage its waiting elements in one
// bundle, so under a backlog the next bundle follows this one and lasts
// about as long; four lengths cover the rest of this bundle and the whole
// next one while bundles grow by up to half each (1.5 + 1.5² < 4). A
// timer that falls due before its key's bundle ends is one the runner puts
// back: prism (v2.77, v2.78) in a loop that takes the CPU the bundles need, so they
// run longer, more elements wait, and the next bundles are longer still.
// The overrun guard (Runner.Guard) learns of that only once a bundle has
// ended, and the bundles outgrow it.
func (c Cadence) nextBundle(f Facts) time.Duration {
	return 4 * c.bundleLength(f)
}

// firstLead is how far ahead a timer set at an element must be while no
// bundle of the worker has ended since it began setting timers
// (Runner.ended; Runner.Since), when nothing tells how long bundles last,
// nor which keys are busy: c.FirstLead. Over 1,000 keys on prism's job
// server, three first bundles ran at once, and keys' timers half a second
// out fell due inside the keys' second bundles, where prism put them back
// in its loop.
func (c Cadence) firstLead(f Facts) time.Duration {
	if f.Runner.ended || !f.AtElement {
		return 0
	}
	return c.FirstLead
}

// longCallWait is how far ahead a quiet key's timer looks again, at least,
// when every element it must come back for is in a call that has run for
// at least runningFor: a quarter of that time (a call that has run that
// long is about as likely to run as long again as to end now), at most
// longCallCap. A hung call so costs its key one callback per longCallCap
// and grid step, not one per grid step.
func (c Cadence) longCallWait(runningFor time.Duration) time.Duration {
	return min(max(runningFor/4, 0), c.longCallCap)
}

// Plan returns when the key's commit timer comes, on the commit grid (or
// at a retry's due time) and never sooner than the runner's guard
// (Runner.Guard) allows, nor, at an element before any bundle of the
// worker has ended, than c.FirstLead (firstLead): a timer that falls
// due while its key is in a bundle is one the runner must put back, and a
// runner that does so in a loop (prism) starves the bundles that would
// commit the key. The caller sets no timer for a key that holds nothing.
//
//   - A busy key (busy) is committed by its own bundles; its timer is a
//     backstop for when they stop, backstop ahead and past the key's
//     next bundle (nextBundle), rounded up to the grid's instants a step
//     apart. So is a newcomer's (newcomer), past the next bundle too
//     unless the elements of keys that came back to the worker lately
//     came mostly as quiet keys' (Pace.Returned): a newcomer among busy
//     keys is likely busy, one among sparse keys likely not. A
//     backstop waits anyway, so it shares the coarser instants that quiet
//     keys' timers use while bundles are long: on the fine grid, the
//     backstops of many keys' first elements (every element, over 10,000
//     keys at a stream's start) each cost the runner a timer bundle.
//   - A quiet key's timer is set, on the grid's instants a step apart,
//     for when its started work is expected to have finished: the pool's
//     expected call duration times the waves of unfinished work ahead of it (of half of all it holds when the key has
//     elements queued for room, so that results are committed, and room
//     freed, before the pool runs dry), at least minRearm, at most a
//     period. A timer that finds the work running before any call has
//     finished waits a grid step; one that finds every element in a long
//     call waits longCallWait.
//   - A retry that is due earlier brings the timer forward to it, a busy
//     key's too (no later element of the key may come to start it), but
//     not sooner than the guard or c.FirstLead allows.
func (c Cadence) Plan(f Facts) time.Time { return c.plan(f, c.busy(f)) }

// plan is Plan, with busy(f) given.
func (c Cadence) plan(f Facts, busy bool) time.Time {
	guard := max(f.Runner.Guard(c), c.firstLead(f))
	soonest := f.Now.Add(max(minRearm, guard))
	if busy || c.newcomer(f) {
		lead := max(c.backstop(f.MeanGap), guard)
		if busy || !f.Runner.returned || f.Runner.busyShare >= 0.5 {
			lead = max(lead, c.nextBundle(f))
		}
		next := NextRound(f.Now.Add(lead), c.step(f.Runner), 0)
		return retryFirst(next, f.RetryDue, soonest)
	}
	var next time.Time
	if f.Active > 0 {
		perWave := max(f.Pool.PerWave, 1)
		waves := max(1, f.Pool.Unfinished/perWave)
		if f.Queued > 0 {
			waves = max(1, f.Pool.Held/(2*perWave))
		}
		expected := f.Pool.Expected * time.Duration(waves)
		if expected == 0 && !f.AtElement {
			expected = c.Grid
		}
		if !f.AtElement && f.Running == f.Active {
			expected = max(expected, c.longCallWait(f.ShortestRun))
		}
		expected = min(max(expected, minRearm), c.Frequency)
		next = NextRound(f.Now.Add(max(expected, guard)), c.step(f.Runner), 0)
	}
	if next.IsZero() && f.RetryDue.IsZero() {
		// Defensive: nothing active and no retry due (the old rule set the
		// zero time here); look again a grid step on.
		next = c.OnGrid(soonest)
	}
	return retryFirst(next, f.RetryDue, soonest)
}

// retryFirst returns the earlier of next and a retry's due time (zero:
// none; next zero: none planned), never before soonest.
func retryFirst(next, retryDue, soonest time.Time) time.Time {
	if !retryDue.IsZero() && (next.IsZero() || retryDue.Before(next)) {
		next = retryDue
	}
	if next.Before(soonest) {
		next = soonest
	}
	return next
}

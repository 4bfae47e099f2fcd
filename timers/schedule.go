package timers

import "time"

// MinRearm is the least time ahead a commit timer aims at before it is
// rounded up to the grid. Below it a runner spends more time delivering
// timers than the pool gains from them.
const MinRearm = 10 * time.Millisecond

// PhaseSlots is how many quarter rounds a period of the callback frequency
// holds: the instants of busy keys' backstops.
//
// Timers share instants because a runner delivers the timers of keys that
// fire at the same instant together, in one bundle, and a bundle per key
// costs far more than the callback itself. Measured on prism (2,560
// elements/s over 100 keys, C = 1 s): with an instant per key the transform
// kept up with 1,930 elements/s at 0.53 CPU s per 1,000; with every key on
// one instant, with all of them (p99 1.0 s, 0.13 CPU s per 1,000).
const PhaseSlots = 4

// GridSteps is how many commit instants a period of the callback frequency
// holds: a quiet key's commit waits at most C / GridSteps past when its
// call was expected to finish.
//
// Four, as many instants a second as the rounds with four phases before
// it: with ten (a grid of 100 ms at C = 1 s), 0.9 × P/L over 10,000 keys
// fell behind on prism (2,433 and 2,607/s of 2,880) and unbounded windows
// over 10,000 keys cost 0.39 to 0.52 CPU s per 1,000 elements, the
// runner's timer bundles growing with the instants.
const GridSteps = 4

// Grid is the step of the commit grid for callback frequency freq: the
// instants (multiples of it since the Unix epoch) at which quiet keys'
// timers are set, shared by all keys so that the runner delivers their
// callbacks together.
func Grid(freq time.Duration) time.Duration { return max(freq/GridSteps, MinRearm) }

// BusyWithin is how close a key's elements must come to count as busy: its
// next element, not its timer, is expected to commit it. max(2C, 2 s), the
// rule before the commit grid: lower thresholds (C/4, C/2) made keys whose
// elements came 0.35 to 0.5 s apart quiet, and their timers fell due while
// their next elements' bundles ran; on prism that left 0.6 and 0.9 × P/L
// over 1,000 keys short of the source rate in some runs (BENCHMARKS.md).
func BusyWithin(freq time.Duration) time.Duration { return max(2*freq, 2*time.Second) }

// BusyBackstop is how far ahead a busy key's backstop is set, given the
// mean gap between its elements (Arrivals.MeanGap in this module's state
// package): three mean gaps, at least max(C/2, 250 ms) and at most
// BusyWithin (max(2C, 2 s)).
//
// A timer that falls due while its key is in a bundle costs the runner
// dearly: prism v2.77 puts it back at its past instant and its bundle loop
// spins until the bundle ends, and under load a busy key nearly always is
// in one. Once enough backstops fall due that way, the loop takes the CPU
// the bundles need and the pipeline falls behind for good. The backstop
// must therefore fall beyond the key's next bundle, and a runner under load
// hands a key's elements over in bursts, one bundle after several gaps:
// hence the mean, not the last gap (a burst's short gap would set a
// backstop between bundles, a timer per element), and three of them. When
// the runner stalls, the gaps between a key's bundles grow, and so do its
// backstops: a cap lower than BusyWithin cuts that off. Measured at 0.9 ×
// P/L over 1,000 keys in four window kinds, same hour (BENCHMARKS.md):
// with max(C/2, 250 ms, 1.5 last gaps) the stream kept up in 4 runs of 12,
// with three mean gaps uncapped in 12 of 12; capped at C in 17 of 24,
// capped at max(2C, 2 s) in 12 of 12.
//
// The floor keeps keys whose elements come close from setting a timer per
// bundle. The cap bounds how long a key's last results wait once its
// elements stop: up to max(2C, 2 s) and a quarter round, for keys whose
// elements came 0.67 s to 2 s apart at the default C.
func BusyBackstop(freq, meanGap time.Duration) time.Duration {
	least := max(freq/2, 250*time.Millisecond)
	return min(max(least, 3*meanGap), BusyWithin(freq))
}

// LongCallWait is how far ahead a quiet key's timer looks again, at least,
// when it finds every element the key has in flight (not waiting out a
// retry's backoff, not held back by WithOrdered) in a call that has run
// for at least runningFor: a quarter of that time (a call that has run that
// long is about as likely to run as long again as to end now), at most the
// callback frequency. The timer is then rounded up to the commit grid, as
// every quiet key's is. Without it such a key came back every grid step, so
// a call that hangs (no WithCallTimeout) cost its key four callbacks a
// second at the default C, each a state read; with it, one every five grid
// steps (1.25 C) once the call has run four periods. A finished call's
// results, and the buffer place they hold, wait at most a quarter of its
// run or C, plus a grid step, past its end.
func LongCallWait(runningFor, freq time.Duration) time.Duration {
	return min(max(runningFor/4, 0), freq)
}

// NextRound returns the earliest instant strictly after now that lies on a
// round increment of freq (counted from the Unix epoch) plus phase. Every call
// within the same period returns the same instant: timers aimed anywhere in
// one step of the grid share its end, and the runner delivers them together.
// freq must be positive.
func NextRound(now time.Time, freq, phase time.Duration) time.Time {
	if freq <= 0 {
		panic("timers: NextRound needs a positive frequency")
	}
	phase %= freq
	since := now.UnixNano() - int64(phase)
	rounds := since / int64(freq)
	if since < 0 && since%int64(freq) != 0 {
		rounds-- // floor, not truncation, before the epoch
	}
	next := time.Unix(0, (rounds+1)*int64(freq)+int64(phase))
	return next
}

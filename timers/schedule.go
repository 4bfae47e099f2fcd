package timers

import (
	"hash/fnv"
	"time"
)

// MinRearm is the shortest delay Rearm asks for. Below it a runner spends more
// time delivering timers than the pool gains from them.
const MinRearm = 10 * time.Millisecond

// PhaseSlots is how many distinct phases keys are spread over in a period.
//
// Keys are not given a phase of their own: a runner delivers the timers of
// keys that fire at the same instant together, in one bundle, and a bundle
// per key costs far more than the callback itself. Measured on prism
// (2,560 elements/s over 100 keys, C = 1 s): with a phase per key the
// transform kept up with 1,930 elements/s at 0.53 CPU s per 1,000; with
// every key on one phase, with all of them (p99 1.0 s, 0.13 CPU s per
// 1,000). A few slots keep that batching while still spreading the load of
// many keys over the period.
const PhaseSlots = 4

// Phase returns the key's offset within one period of freq: one of
// PhaseSlots evenly spaced offsets in [0, freq), chosen by a hash of the key
// bytes (FNV-1a), so every worker agrees. A non-positive freq gives 0.
func Phase(key []byte, freq time.Duration) time.Duration {
	if freq <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write(key)
	slot := h.Sum64() % PhaseSlots
	return time.Duration(slot) * (freq / PhaseSlots)
}

// NextRound returns the earliest instant strictly after now that lies on a
// round increment of freq (counted from the Unix epoch) plus phase. Every call
// within the same period returns the same instant, which is what keeps later
// elements of a key from pushing its commit back. freq must be positive.
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

// Rearm returns when a key's callback should fire again while it still has
// work: at now plus the expected time for that work to make progress (clamped
// to at least MinRearm), unless the next round comes first. An expected value
// of zero or less means "unknown" and gives the next round.
func Rearm(now, nextRound time.Time, expected time.Duration) time.Time {
	if expected <= 0 {
		return nextRound
	}
	if expected < MinRearm {
		expected = MinRearm
	}
	if soon := now.Add(expected); soon.Before(nextRound) {
		return soon
	}
	return nextRound
}

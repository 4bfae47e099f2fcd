package timers

import (
	"hash/fnv"
	"time"
)

// MinRearm is the shortest delay Rearm asks for. Below it a runner spends more
// time delivering timers than the pool gains from them.
const MinRearm = 10 * time.Millisecond

// Phase returns the key's offset within one period of freq, in [0, freq).
// It is a pure function of the key bytes (FNV-1a), so every worker agrees.
// A non-positive freq gives 0.
func Phase(key []byte, freq time.Duration) time.Duration {
	if freq <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write(key)
	return time.Duration(h.Sum64() % uint64(freq))
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

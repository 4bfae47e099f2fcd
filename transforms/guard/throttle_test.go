package guard

import (
	"testing"
	"time"
)

// observeOver spreads accepted and refused answers evenly over d from
// start, mixed evenly too.
func observeOver(th *Throttle, start time.Time, d time.Duration, accepted, refused int) {
	n := accepted + refused
	for i := 0; i < n; i++ {
		th.Observe(start.Add(d*time.Duration(i)/time.Duration(n)), (i+1)*accepted/n > i*accepted/n)
	}
}

func TestThrottlePace(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name              string
		accepted, refused int // over 2 s
		want              float64
	}{
		{"nothing yet", 0, 0, 0},
		{"all accepted", 200, 0, 0},
		{"a third refused (K=2 lets that through)", 200, 100, 0},
		{"most refused: K times the accept rate", 20, 180, 2 * 10},
		{"all refused: a probe a second", 0, 200, minPace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := NewThrottle(DefaultThrottleK)
			observeOver(th, start, 2*time.Second, tc.accepted, tc.refused)
			now := start.Add(2 * time.Second)
			if got := th.Pace(now); got < tc.want*0.9 || got > tc.want*1.1 {
				t.Errorf("pace = %.2f/s; want %.2f/s", got, tc.want)
			}
			if tc.want == 0 {
				if d := th.Admit(now, true).Wait; d != 0 {
					t.Errorf("Admit without a pace = %v; want 0", d)
				}
			}
		})
	}
}

func TestThrottleSpacesAttemptsAtItsPace(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	th := NewThrottle(DefaultThrottleK)
	observeOver(th, start, 2*time.Second, 20, 180) // pace 20/s
	now := start.Add(2 * time.Second)
	var last Turn
	for i := 0; i < 10; i++ {
		last = th.Admit(now, true) // ten attempts asking at once
	}
	if want := 500 * time.Millisecond; !last.Booked || last.Wait < want*9/10 || last.Wait > want*11/10 {
		t.Errorf("the tenth of ten attempts at once: %+v; want a booked wait of about %v at 20/s", last, want)
	}
	for i := 0; i < 30; i++ {
		last = th.Admit(now, true)
	}
	if last.Booked || last.Wait != maxAhead {
		t.Errorf("the 40th attempt at once: %+v; want to ask again after %v, not booked 2 s ahead", last, maxAhead)
	}
}

func TestThrottleCancelHandsTheTurnBack(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	th := NewThrottle(DefaultThrottleK)
	observeOver(th, start, 2*time.Second, 20, 180) // pace 20/s
	now := start.Add(2 * time.Second)
	var turns []Turn
	for i := 0; i < 10; i++ {
		turns = append(turns, th.Admit(now, true))
	}
	// A failed bundle: none of them called. Latest first: x/time/rate
	// hands back a turn only as far as no later turn was booked after it
	// (and maxAhead bounds what can be lost that way).
	for i := len(turns) - 1; i >= 0; i-- {
		th.Cancel(turns[i], now)
	}
	if d := th.Admit(now, true).Wait; d > 100*time.Millisecond {
		t.Errorf("after ten turns handed back, the next attempt waits %v; want about one turn (50 ms)", d)
	}
}

func TestThrottleLullIsNotARefusal(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name string
		idle time.Duration
		want float64 // pace after the lull, per second
	}{
		{"no lull", 0, 2 * 100},
		{"a second idle: the rate of the busy second", time.Second, 2 * 100},
		{"idle past the window: no pace until answers come", 3 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := NewThrottle(DefaultThrottleK)
			observeOver(th, start, 2*time.Second, 200, 800) // 100/s accepted
			now := start.Add(2*time.Second + tc.idle)
			if got := th.Pace(now); got < tc.want*0.85 || got > tc.want*1.15 {
				t.Errorf("pace = %.1f/s; want %.1f/s", got, tc.want)
			}
		})
	}
}

func TestThrottleForgetsAfterItsWindow(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	th := NewThrottle(DefaultThrottleK)
	observeOver(th, start, time.Second, 0, 1000)
	if d := th.Admit(start.Add(time.Second), true).Wait; d <= 0 {
		t.Error("Admit let an attempt through at once after 1,000 refusals")
	}
	later := start.Add(ThrottleWindow + 2*time.Second)
	if got, d := th.Pace(later), th.Admit(later, true).Wait; got != 0 || d != 0 {
		t.Errorf("a window later: pace %.2f, wait %v; want 0 and 0", got, d)
	}
}

// TestThrottleClosedPool runs a pool of 64 workers that send again as soon
// as an answer comes (a refused element makes room for the next at once)
// against a service that accepts up to a rate and refuses the rest, on a
// simulated clock in steps of a millisecond. The rate changes from 1,000/s
// to 500/s at 15 s and back at 30 s. A throttle that only delays attempts
// without lowering their rate keeps most of the pool's excess refused.
func TestThrottleClosedPool(t *testing.T) {
	const (
		k       = 1.1
		workers = 64
		latency = 20 * time.Millisecond // of an accepted call
	)
	capacity := func(at time.Duration) float64 {
		if at >= 15*time.Second && at < 30*time.Second {
			return 500
		}
		return 1000
	}
	start := time.Unix(1_000_000, 0)
	th := NewThrottle(k)
	type worker struct {
		at      time.Duration
		waiting bool // booked a start at at
		asked   bool // asked before without a booking
	}
	ws := make([]worker, workers)
	tokens := 0.0
	type tally struct{ sent, accepted int }
	var phases [3]tally // seconds 10-15, 25-30, 45-50
	phaseOf := func(at time.Duration) int {
		switch s := at / time.Second; {
		case s >= 10 && s < 15:
			return 0
		case s >= 25 && s < 30:
			return 1
		case s >= 45 && s < 50:
			return 2
		}
		return -1
	}
	for at := time.Duration(0); at < 50*time.Second; at += time.Millisecond {
		c := capacity(at)
		tokens = min(tokens+c/1000, c/50)
		now := start.Add(at)
		for i := range ws {
			w := &ws[i]
			if w.at > at {
				continue
			}
			if !w.waiting {
				if turn := th.Admit(now, !w.asked); turn.Wait > 0 {
					w.at, w.waiting, w.asked = at+turn.Wait, turn.Booked, !turn.Booked
					continue
				}
			}
			w.waiting, w.asked = false, false
			ok := tokens >= 1
			if ok {
				tokens--
				w.at = at + latency
			} else {
				w.at = at + time.Millisecond
			}
			th.Observe(now, ok)
			if p := phaseOf(at); p >= 0 {
				phases[p].sent++
				if ok {
					phases[p].accepted++
				}
			}
		}
	}
	for i, want := range []float64{1000, 500, 1000} {
		p := phases[i]
		t.Logf("phase %d: sent %d, accepted %d", i, p.sent, p.accepted)
		ratio := float64(p.sent) / float64(p.accepted)
		rate := float64(p.accepted) / 5
		if ratio > k+0.05 {
			t.Errorf("phase %d (capacity %.0f/s): sent %d for %d accepted (%.2f x); want at most about K = %.2f x", i, want, p.sent, p.accepted, ratio, k)
		}
		if rate < 0.9*want {
			t.Errorf("phase %d: accepted %.0f/s; want at least 0.9 of the capacity %.0f/s", i, rate, want)
		}
	}
}

func TestThrottleRefusedLooksAtTheLastTwoSeconds(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	th := NewThrottle(DefaultThrottleK)
	for i := 0; i < 30; i++ {
		th.Observe(start, i%3 != 0) // a third refused
	}
	if got := th.Refused(start); got < 0.33 || got > 0.34 {
		t.Errorf("refused = %.3f; want 1/3", got)
	}
	later := start.Add(2500 * time.Millisecond)
	for i := 0; i < 10; i++ {
		th.Observe(later, true)
	}
	if got := th.Refused(later); got != 0 {
		t.Errorf("refused 3 s later, all accepted since = %.3f; want 0", got)
	}
}

// sendAgainst drives a throttle of multiplier k for d from start with a
// pool that offers an attempt every millisecond whenever the throttle lets
// it, against a service that refuses each attempt for which refuse says
// so; it returns the attempts accepted, and sent, a second over the last
// quarter of d, and whether the throttle ever paced.
func sendAgainst(k float64, start time.Time, d time.Duration, refuse func(now time.Time, i int) bool) (accepted, sent float64, paced bool) {
	th := NewThrottle(k)
	now, end := start, start.Add(d)
	acc, all := 0, 0
	for i := 0; now.Before(end); i++ {
		turn := th.Admit(now, true)
		for !turn.Booked && turn.Wait > 0 {
			now = now.Add(turn.Wait)
			turn = th.Admit(now, false)
		}
		now = now.Add(turn.Wait)
		ok := !refuse(now, i)
		th.Observe(now, ok)
		paced = paced || th.Pace(now) > 0
		if now.After(end.Add(-d / 4)) {
			all++
			if ok {
				acc++
			}
		}
		now = now.Add(time.Millisecond)
	}
	return float64(acc) / (d / 4).Seconds(), float64(all) / (d / 4).Seconds(), paced
}

// TestThrottleRandomRefusals: a service that refuses a share of attempts at
// random, whatever their rate, keeps the pool at what it accepts of 1,000 a
// second while the share is under the throttle's threshold; above it the
// pace shrinks at every turn (the service accepts a share, not a rate),
// which is why the threshold must lie above a healthy service's refusals.
// A service that accepts a rate (a capacity of 300 a second) is sent K
// times that rate.
func TestThrottleRandomRefusals(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	// The last attempt of every n is refused.
	every := func(n int) func(time.Time, int) bool { return func(_ time.Time, i int) bool { return i%n == n-1 } }
	for _, tc := range []struct {
		name        string
		threshold   float64
		refuse      func(time.Time, int) bool
		least, most float64 // accepted a second at the end
		paced       bool
	}{
		{"5% refused, threshold 0.2", 0.2, every(20), 940, 960, false},
		{"12.5% refused, threshold 0.2", 0.2, every(8), 865, 885, false},
		{"10% refused, the former threshold 0.0476 (K 1.05): the pace shrinks", 1 - 1/1.05, every(10), 0, 100, true},
		{"25% refused, threshold 0.2: the pace shrinks", 0.2, every(4), 0, 100, true},
	} {
		got, _, paced := sendAgainst(ThrottleK(tc.threshold), start, 2*time.Minute, tc.refuse)
		if got < tc.least || got > tc.most || paced != tc.paced {
			t.Errorf("%s: %.0f accepted a second at the end (paced %v), want %.0f to %.0f (paced %v)", tc.name, got, paced, tc.least, tc.most, tc.paced)
		}
	}
	// A capacity: the service accepts at most 300 attempts in each second.
	perSecond := map[int64]int{}
	capacity := func(now time.Time, _ int) bool {
		s := now.Unix()
		perSecond[s]++
		return perSecond[s] > 300
	}
	accepted, sent, _ := sendAgainst(ThrottleK(0.2), start, time.Minute, capacity)
	if accepted < 270 || accepted > 310 || sent < 300*1.25*0.9 || sent > 300*1.25*1.1 {
		t.Errorf("a capacity of 300/s: %.0f accepted and %.0f sent a second at the end, want about 300 and 375 (K = 1.25)", accepted, sent)
	}
}

// TestThrottleNeedsASample: one refusal as the first answer after a lull
// starts no pace; ten refusals do.
func TestThrottleNeedsASample(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	th := NewThrottle(ThrottleK(0.2))
	th.Observe(start, false)
	if got := th.Pace(start); got != 0 {
		t.Errorf("after one refusal: pace %.1f/s, want none", got)
	}
	observeOver(th, start, time.Second, 0, 9)
	if got := th.Pace(start.Add(time.Second)); got != minPace {
		t.Errorf("after ten refusals: pace %.1f/s, want a probe a second", got)
	}
}

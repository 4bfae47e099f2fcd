package guard

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestThrottle(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name              string
		accepted, refused int
		wantLo, wantHi    float64 // the rejection probability after them
	}{
		{"nothing yet", 0, 0, 0, 0},
		{"all accepted", 1000, 0, 0, 0},
		{"half refused (K=2 lets that through)", 500, 500, 0, 0},
		{"most refused", 100, 900, 0.79, 0.81},
		{"all refused", 0, 1000, 0.99, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := NewThrottle(DefaultThrottleK)
			for i := 0; i < tc.accepted; i++ {
				th.Observe(start, true)
			}
			for i := 0; i < tc.refused; i++ {
				th.Observe(start, false)
			}
			if got := th.Rejection(start); got < tc.wantLo || got > tc.wantHi {
				t.Errorf("rejection = %.3f; want in [%.2f, %.2f]", got, tc.wantLo, tc.wantHi)
			}
			if tc.wantHi == 0 && !th.Admit(start, 0, true) {
				t.Error("Admit held an attempt back at rejection 0")
			}
		})
	}
}

func TestThrottleForgetsAfterItsWindow(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	th := NewThrottle(DefaultThrottleK)
	for i := 0; i < 1000; i++ {
		th.Observe(start, false)
	}
	if th.Admit(start, 0.5, true) {
		t.Error("Admit let an attempt through at u=0.5 after 1,000 refusals")
	}
	later := start.Add(ThrottleWindow + time.Second)
	if got := th.Rejection(later); got != 0 {
		t.Errorf("rejection a window later = %.3f; want 0", got)
	}
}

func TestThrottleHeldBackAsksCountAsRequests(t *testing.T) {
	// While the service refuses, held-back asks keep the throttle closed: the
	// pool sends about K times what the service accepts.
	start := time.Unix(1_000_000, 0)
	th := NewThrottle(DefaultThrottleK)
	sent, accepted := 0, 0
	rng := rand.New(rand.NewPCG(1, 2))
	capacity := 0.0 // the service can take a tenth of the asks, up to 5 at once
	for i := 0; i < 30_000; i++ {
		// One ask a millisecond, as a pool's waiters ask about once per call
		// latency; 30 s.
		now := start.Add(time.Duration(i) * time.Millisecond)
		capacity = min(capacity+0.1, 5)
		if !th.Admit(now, rng.Float64(), true) {
			continue
		}
		sent++
		ok := capacity >= 1
		if ok {
			accepted++
			capacity--
		}
		th.Observe(now, ok)
	}
	if ratio := float64(sent) / float64(accepted); ratio > 2.2 {
		t.Errorf("sent %d for %d accepted (%.2f x); want at most about K=2 x", sent, accepted, ratio)
	}
	if want := 30_000 / 10; accepted < want*8/10 {
		t.Errorf("accepted %d; want at least 0.9 of the service's capacity %d", accepted, want)
	}
}

func TestThrottleCountsAHeldBackAttemptOnce(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	th := NewThrottle(DefaultThrottleK)
	for i := 0; i < 30; i++ {
		th.Observe(start, false)
	}
	th.Admit(start, 0, true) // held back: one more request
	before := th.Rejection(start)
	for i := 0; i < 10_000; i++ {
		th.Admit(start, 0, false) // the same attempt asking again
	}
	if after := th.Rejection(start); after != before {
		t.Errorf("rejection after 10,000 asks of one attempt = %.4f; want %.4f as after its first", after, before)
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

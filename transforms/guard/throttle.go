package guard

import (
	"sync"
	"time"
)

// Throttle is client-side adaptive throttling, as in the SRE book's chapter
// "Handling Overload": over the last ThrottleWindow it counts requests (the
// attempts the service answered, and the asks the throttle held back) and
// accepts (answers that were not overload), and holds an attempt back with
// probability
//
//	max(0, (requests - K*accepts) / (requests + 1))
//
// While the service accepts everything the probability is zero. Once it
// refuses, the pool sends about K times what it accepts, so the refusals
// cost the service little and the pool follows its capacity. A held-back
// attempt is not dropped: it waits a moment and asks again. It counts as a
// request once, the first time it is held back, which keeps the throttle
// closed while the service keeps refusing; counting every ask would let a
// pool's waiting attempts close it for good. Requests are counted when
// answered rather than when sent, so that calls still in flight (all of
// them, at the start) do not look like refusals.
type Throttle struct {
	k       float64
	mu      sync.Mutex
	c       *counts // a: requests, b: accepts
	answers *counts // a: answered, b: refused (the last two seconds)
}

// DefaultThrottleK is the SRE book's K: the pool sends up to twice what the
// service accepts. ThrottleKFor gives the transform's.
const DefaultThrottleK = 2

// ThrottleKFor is the multiplier that matches a retry budget of share: the
// pool sends at most 1 + share times what the service accepts, so the
// refusals it still gets are about what the budget lets it retry, and
// retries do not pile up behind the budget. At least 1.05, so that the
// throttle keeps probing a service that accepts little.
func ThrottleKFor(share float64) float64 { return 1 + max(share, 0.05) }

// ThrottleWindow is how far back the throttle counts.
const ThrottleWindow = 10 * time.Second

// NewThrottle returns a throttle with multiplier k (> 1; the SRE book uses
// 2): larger is more aggressive towards the service.
func NewThrottle(k float64) *Throttle {
	return &Throttle{k: k, c: newCounts(ThrottleWindow, 10), answers: newCounts(2*time.Second, 4)}
}

// Admit says whether an attempt goes ahead at now; u is a uniform random
// number in [0, 1). An attempt held back at its first ask (first) counts as
// a request.
func (t *Throttle) Admit(now time.Time, u float64, first bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	req, acc := t.c.sum(now)
	if u >= (req-t.k*acc)/(req+1) {
		return true
	}
	if first {
		t.c.add(now, 1, 0)
	}
	return false
}

// Observe counts the answer to an admitted attempt: accepted is false for an
// overload answer. Abandoned attempts are not observed.
func (t *Throttle) Observe(now time.Time, accepted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if accepted {
		t.c.add(now, 1, 1)
		t.answers.add(now, 1, 0)
	} else {
		t.c.add(now, 1, 0)
		t.answers.add(now, 1, 1)
	}
}

// Rejection returns the current probability of holding an attempt back.
func (t *Throttle) Rejection(now time.Time) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	req, acc := t.c.sum(now)
	return max(0, (req-t.k*acc)/(req+1))
}

// Refused returns the share of the attempts answered in the last two
// seconds (held-back ones not counted) that were refused for load, or 0
// when none were answered: whether the service is overloaded now.
func (t *Throttle) Refused(now time.Time) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	answered, refused := t.answers.sum(now)
	if answered == 0 {
		return 0
	}
	return refused / answered
}

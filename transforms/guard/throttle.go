package guard

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Throttle is client-side adaptive throttling after the SRE book's chapter
// "Handling Overload", made for a pool that waits rather than drops. Over
// the last ThrottleWindow it counts requests (the attempts the service
// answered, and the attempts the throttle delayed) and accepts (answers that
// were not overload). While requests stay within K times the accepts it does
// nothing. Past that, the service is refusing a share of what it gets, and
// the throttle paces every attempt to K times the rate the service accepted
// over the last two seconds: the pool then sends about K times what the
// service accepts, so refusals cost the service little, and the pace follows
// the service's capacity up as well as down (what it accepts at K times its
// pace raises the pace).
//
// Why pacing, not the book's random rejection: the book's client drops a
// rejected request, which takes it out of the traffic. A pool cannot drop an
// element; an attempt held back for a moment comes back, so a rejection
// probability would delay attempts without lowering the rate they are sent
// at. A pace lowers the rate itself.
//
// A delayed attempt counts as one request, which keeps the pace on while
// attempts queue for it; once they stop queueing and the service accepts
// what it gets, the counts fall within K and the pace is off.
//
// K is also the threshold: the throttle paces once the service refuses more
// than 1 - 1/K of what it is sent (ThrottleK). It must lie above the share
// a healthy service refuses at random, whatever the load (a flaky backend,
// a load balancer shedding a little): such a service accepts a share of
// what it gets, not a rate, so a pace of K times what it accepts shrinks
// by K(1 - share) at every turn and would take the pool down to a probe a
// second (in a model of this throttle offered 1,000 attempts a second, K =
// 1.05 and 8% refused at random came down to 12 accepted a second within
// two minutes; TestThrottleRandomRefusals holds the rule).
type Throttle struct {
	k       float64
	mu      sync.Mutex
	c       *counts // a: requests, b: accepts
	answers *counts // a: answered, b: refused (the last two seconds)
	pace    *rate.Limiter
	pacing  bool
	last    time.Time // the latest now Admit saw
}

// DefaultThrottleK is the SRE book's K: the pool sends up to twice what the
// service accepts.
const DefaultThrottleK = 2

// ThrottleK is the multiplier of a throttle that paces once the service
// refuses more than threshold (in (0, 1)) of what it is sent: 1/(1 -
// threshold). Paced, the pool sends that many times what the service
// accepts, so the service keeps refusing about threshold of it.
func ThrottleK(threshold float64) float64 { return 1 / (1 - threshold) }

// ThrottleWindow is how far back the throttle counts requests and accepts.
const ThrottleWindow = 10 * time.Second

// minPace is the pace while the service accepts nothing: a probe a second.
const minPace = 1.0

// minRequests is the fewest requests in the window that can start a pace:
// one refusal as the first answer after a lull is not a share.
const minRequests = 10

// NewThrottle returns a throttle with multiplier k (> 1; the SRE book uses
// 2): larger is more aggressive towards the service.
func NewThrottle(k float64) *Throttle {
	return &Throttle{
		k: k, c: newCounts(ThrottleWindow, 10), answers: newCounts(2*time.Second, 4),
		pace: rate.NewLimiter(rate.Inf, 1),
	}
}

// maxAhead is how far ahead of now an attempt may book its turn: one that
// would wait longer asks again after that long, at the pace of then.
const maxAhead = time.Second

// A Turn is an attempt's answer from Admit.
type Turn struct {
	// Wait is how long the attempt waits before it starts; 0: at once.
	Wait time.Duration
	// Booked: after Wait the attempt starts without asking again; if not,
	// it asks again after Wait (its turn was too far ahead to book).
	Booked bool
	r      *rate.Reservation
}

// Admit schedules an attempt at now: it may start at once, or after the
// Turn's Wait (see Turn). first is false when the attempt asks again after
// a Turn that was not booked: it counts as a request only once. An attempt
// that gives up during a booked wait hands its turn back with Cancel.
func (t *Throttle) Admit(now time.Time, first bool) Turn {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Callers read the clock before the lock: keep it from going back.
	if now.Before(t.last) {
		now = t.last
	}
	t.last = now
	perSecond := t.paceAt(now)
	if perSecond == 0 {
		t.pacing = false
		return Turn{}
	}
	if !t.pacing {
		// The pace starts empty: attempts already sent are what made it
		// start.
		t.pace = rate.NewLimiter(rate.Limit(perSecond), burstOf(perSecond))
		t.pace.AllowN(now, burstOf(perSecond))
		t.pacing = true
	} else {
		t.pace.SetLimitAt(now, rate.Limit(perSecond))
		t.pace.SetBurstAt(now, burstOf(perSecond))
	}
	r := t.pace.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	if wait > 0 && first {
		t.c.add(now, 1, 0)
	}
	if wait > maxAhead {
		r.CancelAt(now)
		return Turn{Wait: maxAhead}
	}
	return Turn{Wait: wait, Booked: true, r: r}
}

// Cancel hands back a booked turn whose attempt gave up while it waited.
func (t *Throttle) Cancel(turn Turn, now time.Time) {
	if turn.r == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(t.last) {
		now = t.last
	}
	turn.r.CancelAt(now)
}

// burstOf is the pace's burst at perSecond: 20 ms of it, at least one.
func burstOf(perSecond float64) int { return max(1, int(perSecond/50)) }

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

// Pace returns the attempts a second the throttle lets through at now, or 0
// while it does not pace.
func (t *Throttle) Pace(now time.Time) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.paceAt(now)
}

// paceAt is Pace under t.mu.
func (t *Throttle) paceAt(now time.Time) float64 {
	req, acc := t.c.sum(now)
	if req <= t.k*acc || req < minRequests {
		return 0
	}
	answered, refused := t.answers.sum(now)
	if answered == 0 {
		// Nothing answered lately (the pool was idle): no rate to pace
		// at. Attempts go, and their answers give one.
		return 0
	}
	// Over the time answers came in: a lull is not a service that accepts
	// nothing.
	return max(t.k*(answered-refused)/t.answers.busySpan(now).Seconds(), minPace)
}

// Refused returns the share of the attempts answered in the last two
// seconds (delayed ones not counted) that were refused for load, or 0 when
// none were answered: whether the service is overloaded now.
func (t *Throttle) Refused(now time.Time) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	answered, refused := t.answers.sum(now)
	if answered == 0 {
		return 0
	}
	return refused / answered
}

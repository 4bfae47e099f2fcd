package guard

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Config says which policies a Guard applies; nil ones are off.
type Config struct {
	// Rate spaces out call starts (LocalRate or a SharedRate).
	Rate Rate
	// Adaptive bounds the calls running at once.
	Adaptive *Adaptive
	// Throttle paces calls while the service refuses for load.
	Throttle *Throttle
	// Budget bounds the retries of overloaded calls.
	Budget *Budget
	// Classify tells how an attempt ended from its error (nil: success);
	// nil means DefaultClassify. Errors of a cancelled attempt are
	// Abandoned whatever it says.
	Classify func(error) Outcome
	// OnLimit, if not nil, is told each change of the adaptive limit (not
	// under any lock of the guard's).
	OnLimit func(from, to int)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits d on the clock of Now, or until ctx ends; nil means a
	// real timer. The throttle's waits use it (the rates keep their own
	// clocks).
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultClassify: nil is a success, an OverloadError an overload, a
// context deadline a timeout, anything else an ordinary failure.
func DefaultClassify(err error) Outcome {
	switch {
	case err == nil:
		return Succeeded
	case errors.As(err, new(*OverloadError)):
		return Overload
	case errors.Is(err, context.DeadlineExceeded):
		return TimedOut
	}
	return Failed
}

// Guard applies its policies to every attempt of a call: see Enter. It is
// safe for concurrent use.
type Guard struct {
	cfg Config

	calls, overloaded, throttled, throttledNs atomic.Int64
	budgetWaits, budgeted, firsts             atomic.Int64
	latencyNs                                 atomic.Int64 // moving mean of accepted calls
	waiting                                   atomic.Int64 // attempts in wait now

	atService atomic.Int64 // attempts admitted whose done has not been called

	// answers counts, over the last AnswerWindow, the accepted calls'
	// summed latency in seconds (a) and the overload answers (b); crowd
	// counts the accepted calls (a) and sums the attempts at the service
	// when each overload answer came (b).
	mu             sync.Mutex
	answers, crowd *counts
}

// AnswerWindow is the time Stats.AcceptedAtOnce and Stats.RefusedShare
// look back over.
const AnswerWindow = 10 * time.Second

// Waiting returns how many attempts wait right now: in Enter for the
// throttle or the rate, or in done holding their slot after an overload
// answer.
func (g *Guard) Waiting() int { return int(g.waiting.Load()) }

// New returns a guard applying cfg.
func New(cfg Config) *Guard {
	if cfg.Classify == nil {
		cfg.Classify = DefaultClassify
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	return &Guard{cfg: cfg, answers: newCounts(AnswerWindow, 10), crowd: newCounts(AnswerWindow, 10)}
}

// Enter admits one attempt of a call. previous is the error of the
// element's attempt before this one (nil for a first attempt).
//
// A retry of an overloaded call that finds no budget while the service is
// overloaded (see Budget) is not admitted: Enter returns later > 0, and the
// caller asks again after that long, holding nothing meanwhile. Otherwise
// Enter waits for the throttle and the rate, counts the call under the
// adaptive limit (which the caller enforces: see Limit), and returns done,
// to be called with the attempt's error once it returns, before the caller
// gives back the attempt's slot; or ctx's error if ctx ends first. After an
// overload answer, done returns only about one call's latency after the
// attempt began (see holdSlot), so the slot is not reused at once.
func (g *Guard) Enter(ctx context.Context, previous error) (done func(error), later time.Duration, err error) {
	overloadRetry := previous != nil && g.cfg.Classify(previous) == Overload
	if overloadRetry && g.cfg.Budget != nil && !g.overloadedNow() {
		// Not binding now, but counted: a burst of retries while the
		// service accepts leaves less budget for when it refuses.
		g.cfg.Budget.Spend(g.cfg.Now())
	} else if overloadRetry && g.cfg.Budget != nil {
		if ok, wait := g.cfg.Budget.Withdraw(g.cfg.Now()); !ok {
			g.budgetWaits.Add(1)
			// Jittered, so that retries sent back together do not all
			// come back at once for the one token that accrued.
			return nil, time.Duration(float64(wait) * (1 + rand.Float64())), nil
		}
	}
	start := g.cfg.Now()
	if err := g.wait(ctx); err != nil {
		g.noteThrottled(start)
		if overloadRetry && g.cfg.Budget != nil {
			g.cfg.Budget.Refund(g.cfg.Now()) // no call was made
		}
		return nil, 0, err
	}
	g.noteThrottled(start)
	if previous == nil {
		g.firsts.Add(1)
		if g.cfg.Budget != nil {
			g.cfg.Budget.Deposit(g.cfg.Now())
		}
	} else if overloadRetry {
		g.budgeted.Add(1)
	}
	g.calls.Add(1)
	g.atService.Add(1)
	began := g.cfg.Now()
	var once atomic.Bool
	return func(err error) {
		if once.Swap(true) {
			return
		}
		if g.finish(ctx, began, err) == Overload {
			g.holdSlot(ctx, began)
		}
	}, 0, nil
}

// wait passes the throttle and the rate, then counts the call under the
// adaptive limit. Calls waiting for the rate do not count there: they are
// not at the service, and counting them would grow the limit while the
// rate holds calls back.
func (g *Guard) wait(ctx context.Context) error {
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	if t := g.cfg.Throttle; t != nil {
		for first := true; ; first = false {
			turn := t.Admit(g.cfg.Now(), first)
			if err := g.cfg.Sleep(ctx, turn.Wait); err != nil {
				t.Cancel(turn, g.cfg.Now())
				return err
			}
			if turn.Wait == 0 || turn.Booked {
				break
			}
		}
	}
	if g.cfg.Rate != nil {
		if err := g.cfg.Rate.Wait(ctx); err != nil {
			return err
		}
	}
	if a := g.cfg.Adaptive; a != nil {
		a.Take()
	}
	return nil
}

// overloadedNow says whether the retry budget binds: while the service has
// refused more than half the budget's share of the attempts answered in the
// last two seconds (always, without a throttle to tell). A throttle that
// paces keeps refusals near its own threshold (ThrottleK), above that
// share at the transform's defaults, so the budget binds while it paces;
// either way retries stay within it, as they number about the refusals.
// Once the service refuses less, retries go on.
func (g *Guard) overloadedNow() bool {
	if g.cfg.Throttle == nil {
		return true
	}
	return g.cfg.Throttle.Refused(g.cfg.Now()) > g.cfg.Budget.share/2
}

// Limit returns the adaptive limit, or 0 without one: the caller runs at
// most that many calls at once (see state.Gate).
func (g *Guard) Limit() int {
	if g.cfg.Adaptive == nil {
		return 0
	}
	return g.cfg.Adaptive.Limit()
}

// noteThrottled counts an attempt that waited more than a millisecond.
func (g *Guard) noteThrottled(start time.Time) {
	if d := g.cfg.Now().Sub(start); d > time.Millisecond {
		g.throttled.Add(1)
		g.throttledNs.Add(int64(d))
	}
}

// holdSlot makes an attempt answered with overload return about one call's
// latency (the moving mean of accepted calls, 5 ms to 1 s) after it began.
// A refusal comes back at once; if its slot went to the next attempt at
// once, a pool a little over the service's capacity would refuse itself in
// a tight loop until the adaptive limit shrank. Held, an excess slot asks
// about as often as a served one.
func (g *Guard) holdSlot(ctx context.Context, began time.Time) {
	hold := min(max(time.Duration(g.latencyNs.Load()), 5*time.Millisecond), time.Second)
	d := hold - g.cfg.Now().Sub(began)
	if d <= 0 {
		return
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	_ = g.cfg.Sleep(ctx, d) // a cancelled attempt returns at once
}

// finish feeds an attempt's end to the policies and returns the outcome.
func (g *Guard) finish(ctx context.Context, began time.Time, err error) Outcome {
	now := g.cfg.Now()
	o := g.cfg.Classify(err)
	if err != nil && ctx.Err() != nil {
		o = Abandoned
	}
	latency := now.Sub(began)
	atService := g.atService.Add(-1) + 1 // this attempt's answer included
	if o == Succeeded {
		old := g.latencyNs.Load()
		g.latencyNs.Store(old + (int64(latency)-old)/8)
	}
	if o == Overload {
		g.overloaded.Add(1)
	}
	g.noteAnswer(now, latency, atService, o)
	if t := g.cfg.Throttle; t != nil && o != Abandoned {
		t.Observe(now, o != Overload)
	}
	if a := g.cfg.Adaptive; a != nil {
		g.release(a, latency, o)
	}
	return o
}

func (g *Guard) release(a *Adaptive, latency time.Duration, o Outcome) {
	from, to := a.Release(g.cfg.Now(), latency, o)
	if from != to && g.cfg.OnLimit != nil {
		g.cfg.OnLimit(from, to)
	}
}

// noteAnswer counts an accepted call's latency, or an overload answer and
// the attempts at the service then, in the answer window.
func (g *Guard) noteAnswer(now time.Time, latency time.Duration, atService int64, o Outcome) {
	if o != Succeeded && o != Overload {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if o == Succeeded {
		g.answers.add(now, latency.Seconds(), 0)
		g.crowd.add(now, 1, 0)
		return
	}
	g.answers.add(now, 0, 1)
	g.crowd.add(now, 0, float64(atService))
}

// answerStats returns AcceptedAtOnce, RefusedShare and AtServiceWhenRefused
// at now.
func (g *Guard) answerStats(now time.Time) (atOnce, refused, whenRefused float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	busy, overloads := g.answers.sum(now)
	accepted, at := g.crowd.sum(now)
	if accepted+overloads == 0 {
		return 0, 0, 0
	}
	if overloads > 0 {
		whenRefused = at / overloads
	}
	return busy / g.answers.busySpan(now).Seconds(), overloads / (accepted + overloads), whenRefused
}

// Stats are a guard's counts since it was made.
type Stats struct {
	Calls         int64         // attempts admitted
	FirstAttempts int64         // of which first attempts of their element
	Budgeted      int64         // of which retries after an overload answer
	BudgetWaits   int64         // retries of overloaded calls sent back for want of budget
	Overloaded    int64         // attempts answered with overload
	Throttled     int64         // attempts that waited over 1 ms to start
	ThrottledTime time.Duration // their waits summed: two attempts waiting the same second add two
	Limit         int           // the adaptive limit now, or 0 without one
	SharedErrors  int64         // calls that found the shared rate's Redis unreachable
	// AcceptedAtOnce is how many calls the service accepted at once, on
	// average over the part of the last AnswerWindow with answers: the
	// accepted calls' summed latency over that time (Little's law).
	AcceptedAtOnce float64
	// RefusedShare is the share of the answers (accepted or refused for
	// load) in the last AnswerWindow that were overload answers.
	RefusedShare float64
	// AtServiceWhenRefused is how many attempts were at the service, on
	// average, when an overload answer of the last AnswerWindow came (that
	// attempt included): well above AcceptedAtOnce when the service
	// refuses for the calls at once, about it when it refuses at random.
	AtServiceWhenRefused float64
}

// Stats returns the guard's counts.
func (g *Guard) Stats() Stats {
	s := Stats{
		Calls: g.calls.Load(), FirstAttempts: g.firsts.Load(), Budgeted: g.budgeted.Load(),
		BudgetWaits: g.budgetWaits.Load(), Overloaded: g.overloaded.Load(),
		Throttled: g.throttled.Load(), ThrottledTime: time.Duration(g.throttledNs.Load()),
	}
	if g.cfg.Adaptive != nil {
		s.Limit = g.cfg.Adaptive.Limit()
	}
	s.AcceptedAtOnce, s.RefusedShare, s.AtServiceWhenRefused = g.answerStats(g.cfg.Now())
	if sr, ok := g.cfg.Rate.(*SharedRate); ok {
		s.SharedErrors = sr.Errors()
	}
	return s
}

// Close releases what the policies hold (the shared rate's connection).
func (g *Guard) Close() error {
	if c, ok := g.cfg.Rate.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

package guard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// clock is a fake clock for the guard's policies.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func TestGuardBudgetsRetriesOfOverloadedCalls(t *testing.T) {
	c := &clock{now: time.Unix(1_000_000, 0)}
	// No throttle: the budget always binds. 10 retries in the window.
	g := New(Config{Budget: NewBudget(0.1, 1, c.now), Now: c.Now})
	overloaded := Overloaded(errors.New("503"), 0)
	granted, sentBack := 0, 0
	for i := 0; i < 100; i++ {
		done, later, err := g.Enter(context.Background(), overloaded)
		switch {
		case err != nil:
			t.Fatal(err)
		case later > 0:
			sentBack++
		default:
			granted++
			done(nil)
		}
	}
	// The budget starts with 10 tokens and nothing deposits.
	if granted != 10 || sentBack != 90 {
		t.Errorf("retries granted %d, sent back %d; want 10 and 90", granted, sentBack)
	}
	// Ordinary retries are not budgeted.
	if _, later, _ := g.Enter(context.Background(), errors.New("plain")); later != 0 {
		t.Errorf("a retry after an ordinary error was sent back for %v; want it admitted", later)
	}
	s := g.Stats()
	if s.Budgeted != 10 || s.BudgetWaits != 90 || s.Calls != 11 || s.FirstAttempts != 0 {
		t.Errorf("stats = %+v; want 10 budgeted, 90 budget waits, 11 calls, 0 first attempts", s)
	}
}

func TestGuardCountsOutcomes(t *testing.T) {
	c := &clock{now: time.Unix(1_000_000, 0)}
	var changes [][2]int
	g := New(Config{Adaptive: NewAdaptive(1, 8, c.now), Throttle: NewThrottle(DefaultThrottleK), Now: c.Now,
		OnLimit: func(from, to int) { changes = append(changes, [2]int{from, to}) }})
	for i, err := range []error{nil, Overloaded(errors.New("429"), time.Second), errors.New("bad"), nil} {
		done, later, err2 := g.Enter(context.Background(), nil)
		if err2 != nil || later != 0 {
			t.Fatalf("Enter %d = %v, %v; want admitted", i, later, err2)
		}
		c.now = c.now.Add(150 * time.Millisecond)
		done(err)
		done(err) // a second report is ignored
	}
	s := g.Stats()
	if s.Calls != 4 || s.FirstAttempts != 4 || s.Overloaded != 1 {
		t.Errorf("stats = %+v; want 4 calls, 4 first attempts, 1 overloaded", s)
	}
	if got := g.cfg.Adaptive.InFlight(); got != 0 {
		t.Errorf("adaptive places in flight after every done = %d; want 0", got)
	}
	if len(changes) == 0 {
		t.Error("OnLimit never called; want the limit's changes reported")
	}
}

func TestGuardWaitFailureRefundsTheBudget(t *testing.T) {
	// A rate that lets nothing through within the context, after its burst.
	b := NewBudget(0, 1, time.Now())
	g := New(Config{Rate: LocalRate(0.001, 1), Budget: b})
	done, _, err := g.Enter(context.Background(), nil) // the burst
	if err != nil {
		t.Fatal(err)
	}
	done(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := g.Enter(ctx, Overloaded(errors.New("503"), 0)); err == nil {
		t.Fatal("Enter past the rate succeeded; want an error")
	}
	granted := 0
	for ok := true; ok; {
		if ok, _ = b.Withdraw(time.Now()); ok {
			granted++
		}
	}
	if granted != 10 {
		t.Errorf("tokens left = %d; want all 10 (the retry that was not made gives its token back)", granted)
	}
	if s := g.Stats(); s.Calls != 1 {
		t.Errorf("stats = %+v; want 1 call", s)
	}
}

func TestGuardLimitIsTheAdaptiveOne(t *testing.T) {
	if got := New(Config{}).Limit(); got != 0 {
		t.Errorf("Limit without an adaptive limit = %d; want 0", got)
	}
	if got := New(Config{Adaptive: NewAdaptive(3, 9, time.Now())}).Limit(); got != 3 {
		t.Errorf("Limit = %d; want the adaptive minimum 3", got)
	}
}

func TestOverloaded(t *testing.T) {
	if Overloaded(nil, time.Second) != nil {
		t.Error("Overloaded(nil) != nil")
	}
	base := errors.New("503 Service Unavailable")
	err := Overloaded(base, 2*time.Second)
	ok, after := IsOverloaded(fmtWrap(err))
	if !ok || after != 2*time.Second || !errors.Is(err, base) {
		t.Errorf("IsOverloaded(wrapped) = %v, %v, Is(base) %v; want true, 2s, true", ok, after, errors.Is(err, base))
	}
	if ok, _ := IsOverloaded(base); ok {
		t.Error("IsOverloaded(plain error) = true")
	}
	for err, want := range map[error]Outcome{nil: Succeeded, err: Overload, context.DeadlineExceeded: TimedOut, base: Failed} {
		if got := DefaultClassify(err); got != want {
			t.Errorf("DefaultClassify(%v) = %v; want %v", err, got, want)
		}
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("call failed"), err) }

func TestGuardBudgetBindsOnlyWhileTheServiceRefuses(t *testing.T) {
	c := &clock{now: time.Unix(1_000_000, 0)}
	th := NewThrottle(ThrottleK(0.2))
	g := New(Config{Budget: NewBudget(0.1, 0.1, c.now), Throttle: th, Now: c.Now}) // 1 retry in the window
	overloaded := Overloaded(errors.New("503"), 0)
	retry := func() bool {
		done, later, err := g.Enter(context.Background(), overloaded)
		if err != nil {
			t.Fatal(err)
		}
		if later > 0 {
			return false
		}
		done(nil)
		return true
	}
	for i := 0; i < 10; i++ {
		th.Observe(c.now, false) // refused: the service is overloaded
	}
	if !retry() || retry() {
		t.Fatal("while the service refuses, want the one retry of the budget, then none")
	}
	c.now = c.now.Add(3 * time.Second)
	for i := 0; i < 10; i++ {
		th.Observe(c.now, true)
	}
	for i := 0; i < 5; i++ {
		if !retry() {
			t.Fatalf("retry %d after the service accepts again was sent back; want it admitted", i+1)
		}
	}
}

func TestGuardHoldsTheSlotAfterAnOverloadAnswer(t *testing.T) {
	c := &clock{now: time.Unix(1_000_000, 0)}
	var slept []time.Duration
	g := New(Config{Now: c.Now, Sleep: func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		c.now = c.now.Add(d)
		return nil
	}})
	attempt := func(took time.Duration, err error) {
		t.Helper()
		done, later, err2 := g.Enter(context.Background(), nil)
		if err2 != nil || later != 0 {
			t.Fatalf("Enter = %v, %v; want admitted", later, err2)
		}
		c.now = c.now.Add(took)
		done(err)
	}
	for i := 0; i < 40; i++ {
		attempt(40*time.Millisecond, nil) // the moving mean nears 40 ms
	}
	for _, tc := range []struct {
		name      string
		took      time.Duration
		err       error
		wantLo    time.Duration
		wantHi    time.Duration
		wantSleep bool
	}{
		{"a refusal at once holds about one latency", time.Millisecond, Overloaded(errors.New("503"), 0), 35 * time.Millisecond, 40 * time.Millisecond, true},
		{"a slow refusal holds the rest of it", 30 * time.Millisecond, Overloaded(errors.New("503"), 0), 5 * time.Millisecond, 10 * time.Millisecond, true},
		{"a refusal slower than a call holds nothing", 50 * time.Millisecond, Overloaded(errors.New("503"), 0), 0, 0, false},
		{"an ordinary error holds nothing", time.Millisecond, errors.New("500"), 0, 0, false},
	} {
		slept = nil
		attempt(tc.took, tc.err)
		switch {
		case !tc.wantSleep && len(slept) != 0:
			t.Errorf("%s: held the slot %v; want no hold", tc.name, slept)
		case tc.wantSleep && (len(slept) != 1 || slept[0] < tc.wantLo || slept[0] > tc.wantHi):
			t.Errorf("%s: held the slot %v; want one hold in [%v, %v]", tc.name, slept, tc.wantLo, tc.wantHi)
		}
	}
}

// lockedClock is a fake clock safe for concurrent attempts.
type lockedClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *lockedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *lockedClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// heldRate holds every Wait until release is closed, after saying so on
// entered.
type heldRate struct{ entered, release chan struct{} }

func (r heldRate) Wait(ctx context.Context) error {
	r.entered <- struct{}{}
	select {
	case <-r.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestGuardThrottledTimeSumsAttempts: ThrottledTime adds up each attempt's
// wait, so attempts waiting at once count that time once each (the metric
// throttled_ms can pass the wall time of the job).
func TestGuardThrottledTimeSumsAttempts(t *testing.T) {
	const attempts = 3
	c := &lockedClock{now: time.Unix(1_000_000, 0)}
	r := heldRate{entered: make(chan struct{}), release: make(chan struct{})}
	g := New(Config{Rate: r, Now: c.Now})
	var wg sync.WaitGroup
	for range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if done, _, err := g.Enter(context.Background(), nil); err == nil {
				done(nil)
			}
		}()
	}
	for range attempts {
		<-r.entered
	}
	c.Advance(time.Second)
	close(r.release)
	wg.Wait()
	if s := g.Stats(); s.Throttled != attempts || s.ThrottledTime != attempts*time.Second {
		t.Errorf("after %d attempts waited the same second: Throttled = %d, ThrottledTime = %v; want %d and %v", attempts, s.Throttled, s.ThrottledTime, attempts, attempts*time.Second)
	}
}

// TestGuardAcceptedAtOnce: the calls accepted at once are the accepted
// calls' summed latency over the time with answers; the refused share
// counts overload answers only.
func TestGuardAcceptedAtOnce(t *testing.T) {
	c := &clock{now: time.Unix(1_000_000, 0)}
	g := New(Config{Now: c.Now})
	if s := g.Stats(); s.AcceptedAtOnce != 0 || s.RefusedShare != 0 {
		t.Errorf("before any answer: AcceptedAtOnce = %v, RefusedShare = %v; want 0, 0", s.AcceptedAtOnce, s.RefusedShare)
	}
	// Over 4 s, a call of 200 ms answered every 100 ms: two at once.
	for range 40 {
		c.now = c.now.Add(100 * time.Millisecond)
		g.finish(context.Background(), c.now.Add(-200*time.Millisecond), nil)
	}
	// Then 10 overload answers, each with 5 attempts at the service, and
	// ordinary failures, which say nothing about load.
	for range 10 {
		g.atService.Store(5)
		g.finish(context.Background(), c.now, Overloaded(errors.New("503"), 0))
		g.finish(context.Background(), c.now, errors.New("bad request"))
	}
	s := g.Stats()
	if s.AcceptedAtOnce < 1.9 || s.AcceptedAtOnce > 2.1 {
		t.Errorf("AcceptedAtOnce = %v; want about 2", s.AcceptedAtOnce)
	}
	if s.RefusedShare != 0.2 {
		t.Errorf("RefusedShare = %v; want 0.2 (10 overload answers of 50 answers about load)", s.RefusedShare)
	}
	if s.AtServiceWhenRefused != 5 {
		t.Errorf("AtServiceWhenRefused = %v; want 5", s.AtServiceWhenRefused)
	}
	c.now = c.now.Add(2 * AnswerWindow)
	if s := g.Stats(); s.AcceptedAtOnce != 0 || s.RefusedShare != 0 {
		t.Errorf("a window later: AcceptedAtOnce = %v, RefusedShare = %v; want 0, 0", s.AcceptedAtOnce, s.RefusedShare)
	}
}

package timers

import (
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestNewCadence(t *testing.T) {
	for _, tc := range []struct {
		c                           time.Duration
		grid, busy, floor, stale, f time.Duration
	}{
		{time.Second, 250 * ms, 500 * ms, 500 * ms, 30 * time.Second, 4 * time.Second},
		{2 * time.Second, 500 * ms, time.Second, time.Second, 40 * time.Second, 8 * time.Second},             // busy within two grid steps
		{10 * time.Second, 2500 * ms, 2 * time.Second, 5 * time.Second, 200 * time.Second, 40 * time.Second}, // busy within 2 s at most
		{20 * ms, minRearm, 500 * ms, 250 * ms, 30 * time.Second, 4 * time.Second},                           // the grid never goes below minRearm; busy within 500 ms at least
	} {
		got := NewCadence(tc.c)
		if got.Grid != tc.grid || got.busyWithin != tc.busy || got.BackstopFloor != tc.floor || got.StaleAfter != tc.stale || got.Forget != tc.f {
			t.Errorf("NewCadence(%v) = %+v; want grid %v, busy within %v, floor %v, stale %v, forget %v", tc.c, got, tc.grid, tc.busy, tc.floor, tc.stale, tc.f)
		}
		if got.FirstLead != min(2*tc.busy, got.backstopCap) {
			t.Errorf("NewCadence(%v).FirstLead = %v, want twice the busy threshold, at most the backstop's cap (%v)", tc.c, got.FirstLead, min(2*tc.busy, got.backstopCap))
		}
		if got.backstopCap != max(2*time.Second, got.BackstopFloor) || got.longCallCap != tc.c || got.GuardCap != got.StaleAfter/2 {
			t.Errorf("NewCadence(%v) = %+v; want the backstop capped at max(2 s, floor), long calls at C, the guard at StaleAfter/2", tc.c, got)
		}
	}
}

// TestBackstop: three mean gaps, within [max(C/2, 250 ms), max(2 s, C/2)].
func TestBackstop(t *testing.T) {
	cases := []struct {
		c, meanGap, want time.Duration
	}{
		{time.Second, 0, 500 * ms},                          // no gap known: the floor
		{time.Second, 39 * ms, 500 * ms},                    // 0.8 × P/L over 100 keys: the floor
		{time.Second, 200 * ms, 600 * ms},                   // three gaps
		{time.Second, 780 * ms, 2 * time.Second},            // the cap, Cadence.backstopCap
		{100 * ms, 50 * ms, 250 * ms},                       // a short period: the 250 ms floor
		{100 * ms, time.Second, 2 * time.Second},            // a short period: the 2 s cap
		{4 * time.Second, 3 * time.Second, 2 * time.Second}, // the cap, 2 s (the floor, C/2, is 2 s too)
		{5 * time.Second, 780 * ms, 2500 * ms},              // a long C: the floor C/2 is the cap
	}
	for _, c := range cases {
		if got := NewCadence(c.c).backstop(c.meanGap); got != c.want {
			t.Errorf("backstop(C=%v, mean gap %v) = %v, want %v", c.c, c.meanGap, got, c.want)
		}
	}
}

// TestStep: the grid's step, doubled while shorter than the runner's
// bundles, at most C.
func TestStep(t *testing.T) {
	cases := []struct {
		c, bundle, want time.Duration
	}{
		{100 * ms, 0, 25 * ms},            // no bundle measured yet: the grid
		{100 * ms, 20 * ms, 25 * ms},      // bundles shorter than a grid step
		{100 * ms, 25 * ms, 25 * ms},      // as long as one
		{100 * ms, 30 * ms, 50 * ms},      // longer: doubled
		{100 * ms, 60 * ms, 100 * ms},     // twice
		{100 * ms, time.Second, 100 * ms}, // at most C
		{time.Second, 300 * ms, 500 * ms}, // the default C
		{20 * ms, 50 * ms, 20 * ms},       // the grid's floor, minRearm: 10 ms, doubled to C
		{15 * ms, 50 * ms, 10 * ms},       // a C that is no multiple of the grid: never past C
	}
	for _, c := range cases {
		cad := NewCadence(c.c)
		got := cad.step(Runner{bundle: c.bundle})
		if got != c.want {
			t.Errorf("step(C=%v, bundles %v) = %v, want %v", c.c, c.bundle, got, c.want)
		}
		if got%cad.Grid != 0 {
			t.Errorf("step(C=%v, bundles %v) = %v, not a multiple of the grid's step %v", c.c, c.bundle, got, cad.Grid)
		}
	}
}

func TestLongCallWait(t *testing.T) {
	cases := []struct {
		runningFor, c, want time.Duration
	}{
		{0, time.Second, 0},
		{20 * ms, time.Second, 5 * ms},
		{400 * ms, time.Second, 100 * ms},
		{time.Hour, time.Second, time.Second}, // hung: one look per period
		{time.Hour, 100 * ms, 100 * ms},
		{-time.Second, time.Second, 0}, // a clock step backwards: no wait
	}
	for _, c := range cases {
		if got := NewCadence(c.c).longCallWait(c.runningFor); got != c.want {
			t.Errorf("longCallWait(%v) at C=%v = %v, want %v", c.runningFor, c.c, got, c.want)
		}
	}
}

// TestPlan is the planner's table: each row a key's situation at the end
// of a callback, and the instant its timer must come.
func TestPlan(t *testing.T) {
	c := NewCadence(time.Second)
	now := time.Unix(1000, 100*int64(ms)) // 100 ms past a grid instant
	at := func(d time.Duration) time.Time { return now.Add(d) }
	grid := func(d time.Duration) time.Time { return c.OnGrid(now.Add(d)) }
	busyAt := func(f Facts) Facts { // an element 100 ms after the key's last, mean gap 100 ms
		f.AtElement, f.Seen, f.Gaps, f.Gap, f.MeanGap = true, at(-100*ms), 5, 100*ms, 100*ms
		return f
	}
	quietAt := func(f Facts) Facts { // an element 3 s after the key's last
		f.AtElement, f.Seen, f.Gaps, f.Gap, f.MeanGap = true, at(-3*time.Second), 4, 3*time.Second, 3*time.Second
		return f
	}
	pool := Load{Expected: 20 * ms, PerWave: 64}
	cases := []planCase{
		{"quiet key in the worker's first bundle: FirstLead",
			quietAt(Facts{Now: now, Active: 1, Pool: pool}), grid(c.FirstLead)},
		{"quiet key, one call started: the grid step after the call's expected end",
			quietAt(Facts{Now: now, Active: 1, Pool: pool}), grid(20 * ms)},
		{"quiet key behind three waves of unfinished work",
			quietAt(Facts{Now: now, Active: 1, Pool: Load{Expected: 200 * ms, Unfinished: 192, PerWave: 64}}), grid(600 * ms)},
		{"a newcomer at C = 1 s, where the backstop's floor is no shorter than the busy threshold: quiet",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool}, grid(20 * ms)},
		{"a newcomer with a retry due (a restarted worker, its bag holding a retry): the retry",
			Facts{Now: now, AtElement: true, Active: 1, RetryDue: at(50 * ms), Pool: Load{Expected: 500 * ms, PerWave: 64}}, at(50 * ms)},
		{"a key not seen by a worker that has set timers for Forget: quiet",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, Runner: Runner{Since: at(-c.Forget)}}, grid(20 * ms)},
		{"a newcomer with elements queued for room, not a busy key: half of what the pool holds",
			Facts{Now: now, AtElement: true, Active: 2, Queued: 1, Pool: Load{Expected: 100 * ms, Held: 512, PerWave: 64}}, grid(400 * ms)},
		{"quiet key, expected end beyond a period: at most a period",
			quietAt(Facts{Now: now, Active: 1, Pool: Load{Expected: 5 * time.Second, PerWave: 64}}), grid(time.Second)},
		{"timer finds the call running before any has finished: a grid step",
			Facts{Now: now, Active: 1, Running: 0, Pool: Load{PerWave: 64}}, grid(c.Grid)},
		{"timer finds every element in a call that has run 2 s: a quarter of it",
			Facts{Now: now, Active: 2, Running: 2, ShortestRun: 2 * time.Second, Pool: pool}, grid(500 * ms)},
		{"timer finds a hung call: one look per period",
			Facts{Now: now, Active: 1, Running: 1, ShortestRun: time.Hour, Pool: pool}, grid(time.Second)},
		{"busy key: the backstop's floor",
			busyAt(Facts{Now: now, Active: 3, Pool: pool}), grid(500 * ms)},
		{"busy key, mean gap 300 ms, while bundles last 300 ms: three gaps on the grid's 500 ms step",
			func() Facts {
				f := busyAt(Facts{Now: now, Active: 3, Pool: pool})
				f.MeanGap, f.Runner.bundle = 300*ms, 300*ms
				return f
			}(), at(1400 * ms)}, // 900 ms on is 1001.0 s: the next 500 ms instant (250 ms: +1.15 s; 1 s: +1.9 s)
		{"busy key late in a bundle that has run 300 ms: past four times that, where its next bundle has ended",
			func() Facts {
				f := busyAt(Facts{Now: now, Active: 3, Pool: pool, BundleAge: 300 * ms})
				f.Runner.bundle = 10 * ms
				return f
			}(), grid(1200 * ms)},
		{"busy key early in a bundle, the longest recent one 400 ms: past four times that",
			func() Facts {
				f := busyAt(Facts{Now: now, Active: 3, Pool: pool, BundleAge: 10 * ms})
				f.Runner.bundle, f.Runner.longest = 10*ms, 400*ms
				return f
			}(), grid(1600 * ms)},
		{"busy key under a backlog whose bundles last an hour: the guard's cap",
			func() Facts {
				f := busyAt(Facts{Now: now, Active: 3, Pool: pool, BundleAge: 10 * ms})
				f.Runner.bundle, f.Runner.longest = time.Hour, time.Hour
				return f
			}(), NextRound(now.Add(c.GuardCap), c.Frequency, 0)}, // bundles that long put timers on the step of C
		{"busy: elements 700 ms apart while the longest recent bundle lasted 200 ms (within four bundles): the backstop, capped",
			Facts{Now: now, AtElement: true, Seen: at(-700 * ms), Gaps: 4, Gap: 700 * ms, MeanGap: 700 * ms, Active: 1, Pool: pool, Runner: Runner{bundle: 10 * ms, longest: 200 * ms}}, grid(c.backstopCap)},
		{"quiet: elements 700 ms apart while the longest recent bundle lasted 150 ms (further than four bundles): on the grid",
			Facts{Now: now, AtElement: true, Seen: at(-700 * ms), Gaps: 4, Gap: 700 * ms, MeanGap: 700 * ms, Active: 1, Pool: pool, Runner: Runner{bundle: 10 * ms, longest: 150 * ms}}, grid(20 * ms)},
		{"quiet: elements 3 s apart while the longest recent bundle lasted 300 ms: on the grid",
			quietAt(Facts{Now: now, Active: 1, Pool: pool, Runner: Runner{bundle: 10 * ms, longest: 300 * ms}}), grid(20 * ms)},
		{"busy key with a retry due before its backstop: the retry",
			busyAt(Facts{Now: now, Active: 1, RetryDue: at(200 * ms), Pool: pool}), at(200 * ms)},
		{"busy key with a retry due after its backstop: the backstop",
			busyAt(Facts{Now: now, Active: 1, RetryDue: at(3 * time.Second), Pool: pool}), grid(500 * ms)},
		{"busy key, elements 400 ms apart: three gaps",
			func() Facts { f := busyAt(Facts{Now: now, Active: 1, Pool: pool}); f.MeanGap = 400 * ms; return f }(), grid(1200 * ms)},
		{"busy at a timer: its last two elements close, the last recent",
			Facts{Now: now, Seen: at(-300 * ms), Gaps: 3, Gap: 100 * ms, MeanGap: 100 * ms, Active: 1, Pool: pool}, grid(500 * ms)},
		{"not busy at a timer whose key's only element was set by the element",
			Facts{Now: now, Seen: at(-300 * ms), Active: 1, Pool: pool}, grid(20 * ms)},
		{"quiet: elements 700 ms apart, further than busyWithin (two grid steps): on the grid",
			Facts{Now: now, AtElement: true, Seen: at(-700 * ms), Gaps: 4, Gap: 700 * ms, MeanGap: 700 * ms, Active: 1, Pool: pool}, grid(20 * ms)},
		{"busy: elements 700 ms apart while the runner's guard is 1 s: the backstop, capped",
			Facts{Now: now, AtElement: true, Seen: at(-700 * ms), Gaps: 4, Gap: 700 * ms, MeanGap: 700 * ms, Active: 1, Pool: pool, Runner: Runner{overrun: 500 * ms}}, grid(c.backstopCap)},
		{"busy at a timer: elements 700 ms apart, the last 300 ms ago, while the runner's guard is 1 s",
			Facts{Now: now, Seen: at(-300 * ms), Gaps: 4, Gap: 700 * ms, MeanGap: 700 * ms, Active: 1, Pool: pool, Runner: Runner{overrun: 500 * ms}}, grid(c.backstopCap)},
		{"quiet again: last element more than busyWithin ago",
			Facts{Now: now, AtElement: true, Seen: at(-3 * time.Second), Gaps: 4, Gap: 100 * ms, MeanGap: 100 * ms, Active: 1, Pool: pool}, grid(20 * ms)},
		{"a retry due before the grid step brings the timer forward",
			quietAt(Facts{Now: now, Active: 1, RetryDue: at(50 * ms), Pool: Load{Expected: 500 * ms, PerWave: 64}}), at(50 * ms)},
		{"a retry due now: not sooner than minRearm",
			Facts{Now: now, RetryDue: at(-time.Second), Pool: pool}, at(minRearm)},
		{"nothing to come back for by itself: a grid step",
			Facts{Now: now, Pool: pool}, grid(minRearm)},
		// The runner's pace.
		{"quiet key while bundles last 300 ms: the next instant of a 500 ms step",
			quietAt(Facts{Now: now, Active: 1, Pool: pool, Runner: Runner{bundle: 300 * ms}}), NextRound(now.Add(20*ms), 500*ms, 0)},
		{"quiet key, keys lately in bundles 240 ms past their timers' setting: not before 480 ms",
			quietAt(Facts{Now: now, Active: 1, Pool: pool, Runner: Runner{overrun: 240 * ms}}), grid(480 * ms)},
		{"busy key, overruns of 2 s: past the backstop's cap if need be",
			busyAt(Facts{Now: now, Active: 1, Pool: pool, Runner: Runner{overrun: 2 * time.Second}}), grid(4 * time.Second)},
		{"a retry due now with overruns: not before the guard",
			Facts{Now: now, RetryDue: at(-time.Second), Pool: pool, Runner: Runner{overrun: 100 * ms}}, at(200 * ms)},
		{"a runner that is far behind: the guard's cap",
			busyAt(Facts{Now: now, Active: 1, Pool: pool, Runner: Runner{overrun: time.Hour}}), grid(c.GuardCap)},
	}
	checkPlans(t, c, now, cases)
}

// planCase is a row of a planner's table: a key's situation at the end of
// a callback, and the instant its timer must come.
type planCase struct {
	name string
	f    Facts
	want time.Time
}

func checkPlans(t *testing.T, c Cadence, now time.Time, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		if !strings.Contains(tc.name, "first bundle") {
			tc.f.Runner.ended = true // a bundle of the worker has ended (see unknownBundles)
		}
		if got := c.Plan(tc.f); !got.Equal(tc.want) {
			t.Errorf("%s: Plan = +%v, want +%v", tc.name, got.Sub(now), tc.want.Sub(now))
		}
	}
}

// TestPlanNewcomer: at a short C, where the backstop's floor is shorter
// than the busy threshold, a key's first element is planned as a busy
// key's while the worker is young and its pool has room.
func TestPlanNewcomer(t *testing.T) {
	c := NewCadence(100 * time.Millisecond)
	now := time.Unix(1000, 100*int64(ms)) // on a grid instant
	at := func(d time.Duration) time.Time { return now.Add(d) }
	grid := func(d time.Duration) time.Time { return c.OnGrid(now.Add(d)) }
	pool := Load{Expected: 20 * ms, PerWave: 64}
	ended := Runner{bundle: 10 * ms, longest: 10 * ms, ended: true} // the worker's bundles have lasted 10 ms
	cases := []planCase{
		{"a newcomer (no element before) is planned as a busy key: the backstop's floor",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, Runner: ended}, grid(c.BackstopFloor)},
		{"a newcomer in the worker's first bundle, whose length nothing tells yet: FirstLead",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, BundleAge: 5 * ms}, grid(c.FirstLead)},
		{"a newcomer 300 ms into the worker's first bundle: four times that, past FirstLead",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, BundleAge: 300 * ms}, grid(1200 * ms)},
		{"a newcomer while the keys that came back came busy: past four times the longest recent bundle",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, Runner: Runner{bundle: 20 * ms, longest: 100 * ms, returned: true, busyShare: 0.9}}, grid(400 * ms)},
		{"a newcomer while the keys that came back came quiet (sparse keys): the backstop's floor",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, Runner: Runner{bundle: 20 * ms, longest: 100 * ms, returned: true, busyShare: 0.1}}, grid(c.BackstopFloor)},
		{"a newcomer while the runner's guard is 1 s: the guard",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, Runner: Runner{overrun: 500 * ms}}, grid(time.Second)},
		{"a newcomer to a worker that has set timers for less than Forget: the backstop's floor",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, Runner: Runner{bundle: 10 * ms, longest: 10 * ms, Since: at(-c.Forget + ms)}}, grid(c.BackstopFloor)},
		{"a key not seen by a worker that has set timers for Forget: quiet",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, Runner: Runner{Since: at(-c.Forget)}}, grid(20 * ms)},
		{"a newcomer while the pool holds half its places: quiet, on the grid",
			Facts{Now: now, AtElement: true, Active: 1, Pool: Load{Expected: 20 * ms, PerWave: 64, Held: 2048, Capacity: 4096}}, grid(20 * ms)},
		{"a newcomer while the pool holds less than half its places: the backstop's floor",
			Facts{Now: now, AtElement: true, Active: 1, Pool: Load{Expected: 20 * ms, PerWave: 64, Held: 2047, Capacity: 4096}, Runner: ended}, grid(c.BackstopFloor)},
		{"a newcomer while bundles last 60 ms: the backstop's floor on the 100 ms step",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, Runner: Runner{bundle: 60 * ms, longest: 60 * ms}}, at(300 * ms)}, // 250 ms on, on 100 ms (the fine grid: +275 ms; quiet: +100 ms)
		{"a newcomer while the longest recent bundle lasted 100 ms: past four times that",
			Facts{Now: now, AtElement: true, Active: 1, Pool: pool, Runner: Runner{bundle: 20 * ms, longest: 100 * ms}}, grid(400 * ms)},
	}
	checkPlans(t, c, now, cases)
}

// TestPlanIsOnTheGridOrARetry: whatever the facts, the timer is after now
// and on the grid, unless a retry's due time set it.
func TestPlanIsOnTheGridOrARetry(t *testing.T) {
	c := NewCadence(time.Second)
	now := time.Unix(2000, 123)
	for active := 0; active < 3; active++ {
		for _, overrun := range []time.Duration{0, 7 * ms, 400 * ms, 3 * time.Second} {
			for _, el := range []bool{false, true} {
				f := Facts{Now: now, AtElement: el, Active: active, Pool: Load{Expected: 33 * ms, PerWave: 8, Unfinished: 20}, Runner: Runner{overrun: overrun}}
				got := c.Plan(f)
				if !got.After(now) {
					t.Errorf("Plan(%+v) = %v, not after now %v", f, got, now)
				}
				if got.UnixNano()%int64(c.Grid) != 0 {
					t.Errorf("Plan(%+v) = %v, not on the grid of %v", f, got, c.Grid)
				}
				if min := now.Add(f.Runner.Guard(c)); got.Before(min) {
					t.Errorf("Plan(%+v) = %v, before the guard %v", f, got, min)
				}
			}
		}
	}
}

package timers

import (
	"testing"
	"time"
)

func TestPaceOverrun(t *testing.T) {
	var p Pace
	t0 := time.Unix(100, 0)
	if got := p.Runner(t0); got != (Runner{}) {
		t.Errorf("a new Pace reads %+v, want zero", got)
	}
	// Three keys' timers in force as a bundle ends at t0 + 600 ms: one due
	// inside it (set 500 ms before it was due), one due after it, one
	// without a set time.
	p.BundleEnded(t0, t0.Add(600*ms), []Plan{
		{At: t0.Add(500 * ms), Set: t0},
		{At: t0.Add(700 * ms), Set: t0.Add(100 * ms)},
		{At: t0.Add(100 * ms)},
	}, time.Minute)
	end := t0.Add(600 * ms)
	cases := []struct {
		after time.Duration
		want  time.Duration
	}{
		{0, 600 * ms},         // from when the overrun timer was set to the bundle's end
		{2400 * ms, 300 * ms}, // four of its lengths: half
		{4800 * ms, 150 * ms},
		{time.Minute, 0}, // forgotten: the planner keeps to its own rules
	}
	for _, c := range cases {
		if got := p.Runner(end.Add(c.after)).overrun; got != c.want {
			t.Errorf("overrun %v after the bundle = %v, want %v", c.after, got, c.want)
		}
	}
	// A shorter overrun does not lower it; a longer one replaces it.
	p.BundleEnded(end.Add(-ms), end, []Plan{{At: end.Add(-ms), Set: end.Add(-100 * ms)}}, time.Minute)
	if got := p.Runner(end).overrun; got != 600*ms {
		t.Errorf("overrun after a shorter one = %v, want 600ms", got)
	}
	p.BundleEnded(end.Add(-ms), end, []Plan{{At: end.Add(-ms), Set: end.Add(-2 * time.Second)}}, time.Minute)
	if got := p.Runner(end).overrun; got != 2*time.Second {
		t.Errorf("overrun after a longer one = %v, want 2s", got)
	}
}

// TestPaceOverrunFollowsTheBundles: the overrun halves for every four
// lengths of the bundle in progress at a random instant, or four of its own
// lengths if those are shorter: while bundles stay as long as the overrun
// it wears off slowly; a run of short bundles right after a long one does
// not count as a quick runner at once (the long one still holds most of
// the recent time); once short bundles hold it, the overrun is gone within
// a couple of seconds.
func TestPaceOverrunFollowsTheBundles(t *testing.T) {
	t0 := time.Unix(100, 0)
	end := t0.Add(2 * time.Second)
	longBundle := func() *Pace { // a 2 s bundle that held a key 2 s past its timer's setting
		var p Pace
		p.BundleEnded(t0, end, []Plan{{At: t0.Add(time.Second), Set: t0}}, time.Minute)
		return &p
	}
	slow := longBundle()
	if got, want := slow.Runner(end.Add(8*time.Second)).overrun, time.Second; got != want {
		t.Errorf("bundles as long as the overrun: overrun 8 s on = %v, want %v (four of its lengths, 8 s, halve it)", got, want)
	}
	quick := longBundle()
	for i := range 200 { // then bundles of 10 ms, back to back
		began := end.Add(time.Duration(i) * 10 * ms)
		quick.BundleEnded(began, began.Add(10*ms), nil, time.Minute)
		if i == 19 {
			if got := quick.Runner(began.Add(10 * ms)).overrun; got < time.Second {
				t.Errorf("twenty bundles of 10 ms after one of 2 s: overrun = %v, want still over 1 s", got)
			}
		}
	}
	if got := quick.Runner(end.Add(2 * time.Second)).overrun; got != 0 {
		t.Errorf("two hundred bundles of 10 ms since: overrun = %v, want 0 (halved more than 16 times)", got)
	}
	// A bundle that is long again does not bring back what has worn off.
	quick.BundleEnded(end.Add(2*time.Second), end.Add(4*time.Second), nil, time.Minute)
	if got := quick.Runner(end.Add(4 * time.Second)).overrun; got != 0 {
		t.Errorf("a long bundle without an overrun after the decay: overrun = %v, want 0", got)
	}
}

// TestPaceSpans: the beat is the bundle in progress at a random instant,
// so many tiny bundles do not hide a long one.
func TestPaceSpans(t *testing.T) {
	var s spans
	s.add(time.Second)
	for range 7 {
		s.add(time.Millisecond)
	}
	if got := s.beat(); got < 300*ms {
		t.Errorf("beat after one bundle of 1 s and seven of 1 ms = %v, want the long one to weigh (over 300 ms)", got)
	}
	var zero spans
	if got := zero.beat(); got != 0 {
		t.Errorf("beat before any bundle = %v, want 0", got)
	}
}

// TestPaceSince: the runner reading says when the worker began setting
// timers; later timers do not move it, a pause past Forget does.
func TestPaceSince(t *testing.T) {
	var p Pace
	t0 := time.Unix(100, 0)
	if got := p.Runner(t0).Since; !got.IsZero() {
		t.Errorf("Since before any plan = %v, want zero", got)
	}
	p.Planned("a", t0.Add(time.Second), t0, NewCadence(time.Second))
	p.Planned("b", t0.Add(2*time.Second), t0.Add(time.Second), NewCadence(time.Second))
	if got := p.Runner(t0.Add(time.Second)).Since; !got.Equal(t0) {
		t.Errorf("Since after two plans = %v, want the first's setting, %v", got, t0)
	}
	// A pause longer than Forget (4 s at C = 1 s): the stream resumes, and
	// its keys, forgotten, come back as newcomers.
	resumed := t0.Add(time.Second + NewCadence(time.Second).Forget + ms)
	p.Planned("a", resumed.Add(time.Second), resumed, NewCadence(time.Second))
	if got := p.Runner(resumed).Since; !got.Equal(resumed) {
		t.Errorf("Since after a pause past Forget = %v, want the resumption, %v", got, resumed)
	}
}

// TestPaceOverrunIsBounded: a sample counts as at most the bound; a plan
// due longer than the bound before its bundle began (stale: its timer fired
// elsewhere) does not count, while one that fell due inside a bundle longer
// than the bound does.
func TestPaceOverrunIsBounded(t *testing.T) {
	t0 := time.Unix(100, 0)
	const most = 7 * time.Second
	cases := []struct {
		name        string
		began       time.Time
		plan        Plan
		wantOverrun time.Duration
	}{
		{"set an hour ago, due just now", t0.Add(-ms), Plan{At: t0.Add(-2 * ms), Set: t0.Add(-time.Hour)}, most},
		{"due 50 s before a short bundle", t0.Add(-ms), Plan{At: t0.Add(-50 * time.Second), Set: t0.Add(-51 * time.Second)}, 0},
		{"due inside a 50 s bundle", t0.Add(-50 * time.Second), Plan{At: t0.Add(-49 * time.Second), Set: t0.Add(-51 * time.Second)}, most},
		{"due 5 s before a 10 s bundle", t0.Add(-10 * time.Second), Plan{At: t0.Add(-15 * time.Second), Set: t0.Add(-16 * time.Second)}, most},
		{"due 5 s before a short bundle, set 6 s ago", t0.Add(-ms), Plan{At: t0.Add(-5 * time.Second), Set: t0.Add(-6 * time.Second)}, 6 * time.Second},
		{"due 50 s ago, the bundle's start unknown", time.Time{}, Plan{At: t0.Add(-50 * time.Second), Set: t0.Add(-51 * time.Second)}, 0},
	}
	for _, c := range cases {
		var p Pace
		p.BundleEnded(c.began, t0, []Plan{c.plan}, most)
		if got := p.Runner(t0).overrun; got != c.wantOverrun {
			t.Errorf("%s: overrun = %v, want %v", c.name, got, c.wantOverrun)
		}
	}
}

func TestPacePlans(t *testing.T) {
	var p Pace
	t0 := time.Unix(100, 0)
	p.Planned("a", t0.Add(time.Second), t0, NewCadence(time.Second))
	p.Planned("b", t0.Add(time.Second), t0, NewCadence(time.Second))
	p.Planned("a", t0.Add(2*time.Second), t0.Add(time.Second), NewCadence(time.Second)) // replaces a's
	p.Drop("b")
	if got, ok := p.InForce("a"); !ok || !got.At.Equal(t0.Add(2*time.Second)) || !got.Set.Equal(t0.Add(time.Second)) {
		t.Errorf("InForce(a) = %+v, %v; want the later plan", got, ok)
	}
	if _, ok := p.InForce("b"); ok {
		t.Errorf("InForce(b) found a dropped plan")
	}
}

func TestPacePlansAreBounded(t *testing.T) {
	var p Pace
	t0 := time.Unix(100, 0)
	for i := 0; i < 100; i++ {
		p.Planned(string(rune('a'+i%26))+string(rune('0'+i/26)), t0, t0, NewCadence(3*time.Second))
	}
	p.Planned("late", t0.Add(2*time.Minute), t0.Add(2*time.Minute), NewCadence(3*time.Second))
	if n := len(p.plans); n != 1 {
		t.Errorf("%d plans kept after the forget period, want 1 (the one just made)", n)
	}
}

func TestRunnerGuard(t *testing.T) {
	c := NewCadence(time.Second)
	for _, tc := range []struct {
		r    Runner
		want time.Duration
	}{
		{Runner{}, 0},
		{Runner{overrun: 400 * ms}, 800 * ms},
		{Runner{overrun: time.Minute}, c.GuardCap}, // capped within the stale period
	} {
		if got := tc.r.Guard(c); got != tc.want {
			t.Errorf("%+v.Guard = %v, want %v", tc.r, got, tc.want)
		}
	}
}

// TestPaceBundle: the mean of bundle durations, each new one weighing an
// eighth; a bundle without a start time is not counted.
func TestPaceBundle(t *testing.T) {
	var p Pace
	t0 := time.Unix(100, 0)
	p.BundleEnded(t0, t0.Add(80*ms), nil, time.Minute)
	if got := p.Runner(t0).bundle; got != 80*ms {
		t.Errorf("bundle after one of 80 ms = %v, want 80ms", got)
	}
	p.BundleEnded(t0, t0.Add(160*ms), nil, time.Minute)
	if got := p.Runner(t0).bundle; got != 90*ms {
		t.Errorf("bundle after 80 and 160 ms = %v, want 90ms", got)
	}
	p.BundleEnded(time.Time{}, t0.Add(time.Hour), nil, time.Minute)
	if got := p.Runner(t0).bundle; got != 90*ms {
		t.Errorf("bundle after one with no start = %v, want 90ms (not counted)", got)
	}
}

// TestPaceLongest: the longest recent bundle is a decaying maximum: a
// longer bundle replaces it at once, shorter ones leave it, and it wears
// off once bundles have stayed short for many of their lengths.
func TestPaceLongest(t *testing.T) {
	var p Pace
	t0 := time.Unix(100, 0)
	if got := p.Runner(t0).longest; got != 0 {
		t.Errorf("longest before any bundle = %v, want 0", got)
	}
	now := t0
	end := func(d time.Duration) {
		p.BundleEnded(now, now.Add(d), nil, time.Minute)
		now = now.Add(d)
	}
	end(80 * ms)
	end(300 * ms)
	if got := p.Runner(now).longest; got != 300*ms {
		t.Errorf("longest after bundles of 80 and 300 ms = %v, want 300ms", got)
	}
	end(50 * ms)
	if got := p.Runner(now).longest; got < 250*ms || got > 300*ms {
		t.Errorf("longest 50 ms after a bundle of 300 ms = %v, want between 250ms and 300ms", got)
	}
	for i := 0; i < 400; i++ {
		end(10 * ms)
	}
	if got := p.Runner(now).longest; got > 20*ms {
		t.Errorf("longest after 400 bundles of 10 ms = %v, want at most 20ms (worn off)", got)
	}
}

// TestPaceReturned: the busy share starts at the first element of a key
// that came back, then moves by a sixty-fourth per element; a worker that
// starts setting timers anew after Forget forgets it, and that a bundle
// has ended.
func TestPaceReturned(t *testing.T) {
	var p Pace
	c := NewCadence(100 * ms)
	t0 := time.Unix(100, 0)
	if r := p.Runner(t0); r.returned || r.ended {
		t.Errorf("a new Pace: returned %v, ended %v; want neither", r.returned, r.ended)
	}
	p.Planned("k", t0.Add(time.Second), t0, c)
	p.Returned(true)
	if r := p.Runner(t0); !r.returned || r.busyShare != 1 {
		t.Errorf("after one busy key's element: returned %v, share %v; want true, 1", r.returned, r.busyShare)
	}
	p.Returned(false)
	if got, want := p.Runner(t0).busyShare, 1-1.0/64; got != want {
		t.Errorf("after a quiet key's element: share %v, want %v", got, want)
	}
	p.BundleEnded(t0, t0.Add(50*ms), nil, time.Minute)
	if !p.Runner(t0).ended {
		t.Error("after a bundle ended: ended false, want true")
	}
	later := t0.Add(c.Forget + time.Second)
	p.Planned("k", later.Add(time.Second), later, c)
	if r := p.Runner(later); r.returned || r.ended {
		t.Errorf("after a pause longer than Forget: returned %v, ended %v; want neither", r.returned, r.ended)
	}
}

// TestPacePlan: Pace.Plan plans as Cadence.Plan does with the pace's
// Runner, records the plan as Planned does, and records an element of a
// key seen before as Returned does (a timer's callback and a new key's
// element record none).
func TestPacePlan(t *testing.T) {
	c := NewCadence(100 * ms)
	t0 := time.Unix(100, 0)
	for _, tc := range []struct {
		name     string
		f        Facts
		returned bool
	}{
		{"element of a key seen before", Facts{Now: t0, AtElement: true, Seen: t0.Add(-10 * ms), Active: 1}, true},
		{"element of a new key", Facts{Now: t0, AtElement: true, Active: 1}, false},
		{"timer", Facts{Now: t0, Seen: t0.Add(-10 * ms), Active: 1}, false},
	} {
		var p, q Pace
		p.BundleEnded(t0.Add(-time.Second), t0.Add(-500*ms), nil, time.Minute)
		q.BundleEnded(t0.Add(-time.Second), t0.Add(-500*ms), nil, time.Minute)
		f := tc.f
		f.Runner = q.Runner(t0)
		want := c.Plan(f)
		if got := p.Plan(c, "k", tc.f); !got.Equal(want) {
			t.Errorf("%s: Plan = %v, want %v (Cadence.Plan)", tc.name, got, want)
		}
		if pl, ok := p.InForce("k"); !ok || !pl.At.Equal(want) || !pl.Set.Equal(t0) {
			t.Errorf("%s: plan in force %+v, %v; want at %v, set %v", tc.name, pl, ok, want, t0)
		}
		if got := p.Runner(t0).returned; got != tc.returned {
			t.Errorf("%s: returned %v, want %v", tc.name, got, tc.returned)
		}
	}
}

package main

import (
	"testing"
	"time"
)

// TestKeyArrivals: timeronly's shared arrivals keep a key as async's pool
// keeps an owner: every element counts a gap from the one before, a timer
// keeps the key alive without counting one, and a key is forgotten only
// when its bag is empty and it has had no callback for longer than forget.
// Each step makes the calls timerOnlyStream's ProcessElement (an element)
// or OnTimer (a timer) makes; the DoFn itself is not run here.
func TestKeyArrivals(t *testing.T) {
	const forget = 4 * time.Second
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		name    string
		at      time.Duration
		element bool
		holds   bool // what the bag holds after the callback
		// want: the key's previous element (zero: none remembered) and
		// its gaps after the callback
		wantLast time.Duration // -1: zero time
		wantGaps int
		wantGap  time.Duration
	}
	steps := []step{
		{"first element", 0, true, true, -1, 0, 0},
		{"second, 300 ms on", 300 * time.Millisecond, true, true, 0, 1, 300 * time.Millisecond},
		{"its timer empties the bag", 500 * time.Millisecond, false, false, 300 * time.Millisecond, 1, 300 * time.Millisecond},
		{"an element within forget of the timer, 4.4 s after the last element: remembered", 4400 * time.Millisecond, true, true, 300 * time.Millisecond, 2, 4100 * time.Millisecond},
		{"an element 10 s on while the bag holds one: remembered", 14400 * time.Millisecond, true, true, 4400 * time.Millisecond, 3, 10 * time.Second},
		{"its timer empties the bag", 14500 * time.Millisecond, false, false, 14400 * time.Millisecond, 3, 10 * time.Second},
		{"an element past forget of the last callback, bag empty: forgotten, a newcomer", 20 * time.Second, true, true, -1, 0, 0},
	}
	a := keyArrivals{m: map[string]*keyArrival{}}
	for _, s := range steps {
		before, after := a.touch("k", at(s.at), s.element, forget)
		a.setHolds("k", s.holds)
		wantLast := time.Time{}
		if s.wantLast >= 0 {
			wantLast = at(s.wantLast)
		}
		if !before.Last.Equal(wantLast) {
			t.Errorf("%s: the previous element = %v, want %v", s.name, before.Last, wantLast)
		}
		if after.Gaps != s.wantGaps || after.Gap != s.wantGap {
			t.Errorf("%s: after it %d gaps, the latest %v; want %d, %v", s.name, after.Gaps, after.Gap, s.wantGaps, s.wantGap)
		}
		if !s.element && after != before {
			t.Errorf("%s: a timer changed the arrivals from %+v to %+v", s.name, before, after)
		}
	}
}

package timers

import (
	"context"
	"testing"
	"time"
)

func TestNextRound(t *testing.T) {
	base := time.Unix(1000, 0)
	tests := []struct {
		name  string
		now   time.Time
		freq  time.Duration
		phase time.Duration
		want  time.Time
	}{
		{"on a boundary moves to the next", base, time.Second, 0, base.Add(time.Second)},
		{"mid period", base.Add(300 * time.Millisecond), time.Second, 0, base.Add(time.Second)},
		{"phase ahead in this period", base.Add(100 * time.Millisecond), time.Second, 250 * time.Millisecond, base.Add(250 * time.Millisecond)},
		{"phase already passed", base.Add(400 * time.Millisecond), time.Second, 250 * time.Millisecond, base.Add(1250 * time.Millisecond)},
		{"phase wraps modulo freq", base.Add(100 * time.Millisecond), time.Second, 1250 * time.Millisecond, base.Add(250 * time.Millisecond)},
		{"before the epoch", time.Unix(-1, 500_000_000), time.Second, 0, time.Unix(0, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextRound(tc.now, tc.freq, tc.phase); !got.Equal(tc.want) {
				t.Errorf("NextRound(%v, %v, %v) = %v, want %v", tc.now, tc.freq, tc.phase, got, tc.want)
			}
		})
	}
}

func TestNextRoundIsStableWithinAPeriod(t *testing.T) {
	const phase = 250 * time.Millisecond
	start := time.Unix(5000, 0)
	first := NextRound(start, time.Second, phase)
	for d := time.Duration(0); start.Add(d).Before(first); d += 37 * time.Millisecond {
		if got := NextRound(start.Add(d), time.Second, phase); !got.Equal(first) {
			t.Fatalf("NextRound at +%v = %v, want the same instant %v", d, got, first)
		}
	}
}

func TestManual(t *testing.T) {
	m := NewManual(time.Unix(10, 0))
	if got := m.Advance(time.Second); !got.Equal(time.Unix(11, 0)) {
		t.Errorf("Advance = %v, want %v", got, time.Unix(11, 0))
	}
	if got := m.Now(); !got.Equal(time.Unix(11, 0)) {
		t.Errorf("Now = %v, want %v", got, time.Unix(11, 0))
	}
}

func TestManualSleep(t *testing.T) {
	m := NewManual(time.Unix(10, 0))
	woke := make(chan error, 1)
	go func() { woke <- m.Sleep(context.Background(), 2*time.Second) }()
	// The sleeper may register before or after this Advance; either way
	// it needs the clock two seconds past its call, and one second cannot
	// be that.
	m.Advance(time.Second)
	select {
	case err := <-woke:
		t.Fatalf("Sleep(2s) returned (%v) before the clock moved 2 s", err)
	case <-time.After(20 * time.Millisecond):
	}
	for i := 0; i < 100; i++ {
		m.Advance(time.Second)
		select {
		case err := <-woke:
			if err != nil {
				t.Errorf("Sleep = %v; want nil", err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("Sleep(2s) did not return after the clock moved 100 s")
}

func TestManualSleepEndsWithItsContext(t *testing.T) {
	m := NewManual(time.Unix(10, 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Sleep(ctx, time.Hour); err != context.Canceled {
		t.Errorf("Sleep with a cancelled context = %v; want context.Canceled", err)
	}
	if len(m.sleepers) != 0 {
		t.Errorf("%d sleepers left after a cancelled Sleep; want 0", len(m.sleepers))
	}
}

func TestGridAndBusyWithin(t *testing.T) {
	for _, tc := range []struct {
		freq       time.Duration
		grid, busy time.Duration
	}{
		{time.Second, 250 * time.Millisecond, 2 * time.Second},
		{10 * time.Second, 2500 * time.Millisecond, 20 * time.Second},
		{20 * time.Millisecond, MinRearm, 2 * time.Second}, // the grid never goes below MinRearm
	} {
		if got := Grid(tc.freq); got != tc.grid {
			t.Errorf("Grid(%v) = %v, want %v", tc.freq, got, tc.grid)
		}
		if got := BusyWithin(tc.freq); got != tc.busy {
			t.Errorf("BusyWithin(%v) = %v, want %v", tc.freq, got, tc.busy)
		}
	}
}

// TestBusyBackstop: three mean gaps, within [max(C/2, 250 ms),
// max(2C, 2 s)].
func TestBusyBackstop(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		freq, meanGap, want time.Duration
	}{
		{time.Second, 0, 500 * ms},                // no gap known: the floor
		{time.Second, 39 * ms, 500 * ms},          // 0.8 × P/L over 100 keys: the floor
		{time.Second, 200 * ms, 600 * ms},         // three gaps
		{time.Second, 347 * ms, 1041 * ms},        // 0.9 × P/L over 1,000 keys
		{time.Second, 780 * ms, 2 * time.Second},  // 0.4 × P/L over 1,000 keys: the cap, max(2C, 2 s)
		{time.Second, 1900 * ms, 2 * time.Second}, // the slowest busy key
		{100 * ms, 50 * ms, 250 * ms},             // a short period: the 250 ms floor
		{100 * ms, 0, 250 * ms},
		{100 * ms, 200 * ms, 600 * ms},
		{100 * ms, time.Second, 2 * time.Second}, // a short period: the 2 s cap
		{4 * time.Second, time.Second, 3 * time.Second},
		{4 * time.Second, 3 * time.Second, 8 * time.Second}, // the cap, 2C
	}
	for _, c := range cases {
		if got := BusyBackstop(c.freq, c.meanGap); got != c.want {
			t.Errorf("BusyBackstop(%v, %v) = %v, want %v", c.freq, c.meanGap, got, c.want)
		}
	}
}

func TestLongCallWait(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		runningFor, freq, want time.Duration
	}{
		{0, time.Second, 0},                         // just started: no wait of its own
		{20 * ms, time.Second, 5 * ms},              // a call of the usual length: under a grid step
		{400 * ms, time.Second, 100 * ms},           // a quarter of its run
		{4 * time.Second, time.Second, time.Second}, // four periods: one look per period
		{time.Hour, time.Second, time.Second},       // hung: still one per period
		{time.Hour, 100 * ms, 100 * ms},             // a short period caps it lower
		{-time.Second, time.Second, 0},              // a clock step backwards: no wait
	}
	for _, c := range cases {
		if got := LongCallWait(c.runningFor, c.freq); got != c.want {
			t.Errorf("LongCallWait(%v, %v) = %v, want %v", c.runningFor, c.freq, got, c.want)
		}
	}
}

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

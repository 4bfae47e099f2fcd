package guard

import (
	"testing"
	"time"
)

// drain takes retries until the budget refuses one at now.
func drain(t *testing.T, b *Budget, now time.Time) (granted int) {
	t.Helper()
	for {
		ok, wait := b.Withdraw(now)
		if !ok {
			if wait <= 0 {
				t.Fatalf("Withdraw refused with wait %v; want a positive wait", wait)
			}
			return granted
		}
		granted++
	}
}

func TestBudget(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name   string
		share  float64
		firsts int
		want   int // retries granted at once
	}{
		{"the floor's share of the window only", 0.1, 0, 100},
		{"10% of 1,000 first attempts on top", 0.1, 1000, 100 + 100},
		{"20% of 1,000", 0.2, 1000, 100 + 200},
		{"no share", 0, 1000, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(tc.share, DefaultBudgetFloor, start)
			for i := 0; i < tc.firsts; i++ {
				b.Deposit(start)
			}
			// Tenths add up in floating point: allow one less.
			if got := drain(t, b, start); got < tc.want-1 || got > tc.want {
				t.Errorf("retries granted = %d; want %d", got, tc.want)
			}
		})
	}
}

func TestBudgetWindowMovesOn(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	b := NewBudget(0.1, DefaultBudgetFloor, start)
	for i := 0; i < 1000; i++ {
		b.Deposit(start)
	}
	if got := drain(t, b, start); got != 200 {
		t.Fatalf("granted %d; want 200", got)
	}
	// A window later the first attempts and the retries are forgotten: only
	// the floor's share is left.
	if got := drain(t, b, start.Add(BudgetWindow+time.Second)); got != 100 {
		t.Errorf("granted a window later = %d; want 100", got)
	}
}

func TestBudgetRefund(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	b := NewBudget(0, 1, start)
	if got := drain(t, b, start); got != 10 {
		t.Fatalf("granted %d; want 10", got)
	}
	b.Refund(start)
	if got := drain(t, b, start); got != 1 {
		t.Errorf("granted after a refund = %d; want 1", got)
	}
}

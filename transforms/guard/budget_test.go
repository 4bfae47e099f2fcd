package guard

import (
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name    string
		firsts  int // first attempts deposited before the retries
		seconds int // of floor accrual after the starting balance is spent
		want    int // retries granted
	}{
		{"starting balance only", 0, 0, 10},
		{"10% of 1,000 first attempts on top", 1000, 0, 10 + 100},
		{"the floor adds 5 a second", 0, 4, 10 + 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(DefaultBudgetShare, DefaultBudgetFloor, start)
			got := 0
			drain := func(now time.Time) {
				for {
					ok, wait := b.Withdraw(now)
					if !ok {
						if wait <= 0 {
							t.Fatalf("Withdraw refused with wait %v; want a positive wait", wait)
						}
						return
					}
					got++
				}
			}
			drain(start)
			for i := 0; i < tc.firsts; i++ {
				b.Deposit(start)
				drain(start)
			}
			for s := 1; s <= tc.seconds; s++ {
				drain(start.Add(time.Duration(s) * time.Second))
			}
			// Tenths of a token add up in floating point: allow one less.
			if got < tc.want-1 || got > tc.want {
				t.Errorf("retries granted = %d; want %d", got, tc.want)
			}
		})
	}
}

func TestBudgetIsCapped(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	b := NewBudget(0.5, 1, start)
	for i := 0; i < 10_000; i++ {
		b.Deposit(start)
	}
	got := 0
	for ok := true; ok; {
		if ok, _ = b.Withdraw(start.Add(time.Hour)); ok {
			got++
		}
	}
	if got != 10 {
		t.Errorf("retries after a long quiet spell = %d; want the cap, 10", got)
	}
}

package guard

import (
	"sync"
	"time"
)

// Budget bounds the retries of overloaded calls: each first attempt of an
// element adds Share of a token, each retry after an overload answer takes
// one, and a retry that finds no token waits (it is not dropped) until one
// accrues. So under overload, retries add at most Share of the first
// attempts as extra calls, plus Floor per second: the floor keeps retries
// moving when no first attempts are left (the end of a bounded input). The
// balance is capped at Cap, so a quiet spell does not save up a burst.
// Retries after other errors are not budgeted: they are the element's own
// business, and WithMaxAttempts bounds them.
type Budget struct {
	share, floor, cap float64

	mu      sync.Mutex
	balance float64
	last    time.Time
}

// Defaults of the retry budget.
const (
	DefaultBudgetShare = 0.1 // retries of overloaded calls: 10% of first attempts
	DefaultBudgetFloor = 5.0 // tokens per second accrued without first attempts
)

// NewBudget returns a budget of share (>= 0) tokens per first attempt and
// floor (> 0) tokens per second, starting full.
func NewBudget(share, floor float64, now time.Time) *Budget {
	c := max(10, floor)
	return &Budget{share: share, floor: floor, cap: c, balance: c, last: now}
}

// accrue adds the floor's tokens since the last call; b.mu is held.
func (b *Budget) accrue(now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.balance = min(b.cap, b.balance+b.floor*d.Seconds())
		b.last = now
	}
}

// Deposit counts a first attempt.
func (b *Budget) Deposit(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.accrue(now)
	b.balance = min(b.cap, b.balance+b.share)
}

// Withdraw takes a token for a retry of an overloaded call, or says how long
// to wait before asking again.
func (b *Budget) Withdraw(now time.Time) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.accrue(now)
	if b.balance >= 1 {
		b.balance--
		return true, 0
	}
	wait = time.Duration((1 - b.balance) / b.floor * float64(time.Second))
	return false, max(wait, 10*time.Millisecond)
}

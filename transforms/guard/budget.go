package guard

import (
	"sync"
	"time"
)

// Budget bounds the retries of overloaded calls, in the manner of Finagle's
// retry budget: over the last BudgetWindow, retries after an overload answer
// may number Share of the first attempts made, plus Floor per second of the
// window. A retry that finds no budget waits (it is not dropped) and asks
// again. So under overload, retries add at most Share of the first attempts
// as extra calls, plus the floor. A Guard applies the budget only while the
// service refuses more than half of Share of the attempts (see Guard.Enter):
// once it refuses less, retries go on, so a bounded input's last retries do not wait
// on the floor when no first attempts are left. Retries after other errors
// are not budgeted: they are the element's own business, and
// WithMaxAttempts bounds them.
type Budget struct {
	share, floor float64

	mu sync.Mutex
	c  *counts // a: first attempts, b: budgeted retries
}

// Defaults of the retry budget.
const (
	DefaultBudgetShare = 0.1  // retries of overloaded calls: 10% of first attempts
	DefaultBudgetFloor = 10.0 // retries a second allowed without first attempts
	BudgetWindow       = 10 * time.Second
)

// NewBudget returns a budget of share (>= 0) retries per first attempt and
// floor (> 0) retries per second, over BudgetWindow.
func NewBudget(share, floor float64, now time.Time) *Budget {
	return &Budget{share: share, floor: floor, c: newCounts(BudgetWindow, 10)}
}

// Deposit counts a first attempt.
func (b *Budget) Deposit(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.c.add(now, 1, 0)
}

// Withdraw counts a retry of an overloaded call if the budget allows one, or
// says how long to wait before asking again.
func (b *Budget) Withdraw(now time.Time) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	firsts, retries := b.c.sum(now)
	if retries+1 <= b.share*firsts+b.floor*BudgetWindow.Seconds() {
		b.c.add(now, 0, 1)
		return true, 0
	}
	// The window moves on by a slice at a time; the floor alone frees one
	// retry every 1/floor seconds.
	return false, max(time.Duration(float64(time.Second)/b.floor), 10*time.Millisecond)
}

// Spend counts a retry of an overloaded call made without asking (while
// the budget does not bind).
func (b *Budget) Spend(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.c.add(now, 0, 1)
}

// Refund forgets a retry taken by Withdraw that was not made.
func (b *Budget) Refund(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.c.add(now, 0, -1)
}

package worker

// A DoFn instance's open bundle as the publishing ledgers know it
// (transforms/internal/ledger): the counts the bundle takes become final
// when its FinishBundle returns without error, and go back to a later
// bundle when it fails or its instance is dropped.

import (
	"runtime"
	"sync"

	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// BundleTickets is a DoFn instance's open bundle, as the ledgers know it:
// its ticket and the ledgers it took counts from.
type BundleTickets struct {
	mu      sync.Mutex // a cleanup releases from another goroutine
	open    ledger.Ticket
	touched []*ledger.Ledger
}

// NewBundleTickets returns owner's tickets, released when owner (a DoFn
// instance, which Beam Go drops after a failed bundle) is collected with a
// bundle open.
func NewBundleTickets[T any](owner *T) *BundleTickets {
	b := &BundleTickets{}
	runtime.AddCleanup(owner, (*BundleTickets).Release, b)
	return b
}

// Begin opens a bundle, releasing one left open (an instance reused after
// a failed bundle, which Beam Go does not do).
func (b *BundleTickets) Begin() {
	if b == nil {
		return
	}
	b.Release()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open = ledger.NewTicket()
}

// Take takes for the open bundle what l holds of total that no bundle has
// (every count now, at once final, outside a bundle).
func (b *BundleTickets) Take(l *ledger.Ledger, total []int64) ([]int64, bool) {
	if b == nil {
		return l.Take(0, total)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == 0 {
		return l.Take(0, total)
	}
	delta, any := l.Take(b.open, total)
	if any && !containsLedger(b.touched, l) {
		b.touched = append(b.touched, l)
	}
	return delta, any
}

// Finish makes the open bundle's counts final: its FinishBundle returned
// without error.
func (b *BundleTickets) Finish() { b.end((*ledger.Ledger).Confirm) }

// Release gives the open bundle's counts back: it failed.
func (b *BundleTickets) Release() { b.end((*ledger.Ledger).Release) }

func (b *BundleTickets) end(how func(*ledger.Ledger, ledger.Ticket)) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.touched {
		how(l, b.open)
	}
	b.open, b.touched = 0, nil
}

func containsLedger(ls []*ledger.Ledger, l *ledger.Ledger) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

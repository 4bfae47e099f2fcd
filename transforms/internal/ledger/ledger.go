// Package ledger publishes counts that a worker process keeps outside any
// bundle (counted by a pool's goroutines, a shared guard, a shared cache) as
// counters of the bundles that publish them, so that each count reaches the
// committed metrics once although a publishing bundle may fail.
//
// A runner keeps a bundle's counter updates only if the bundle commits. A
// count that one bundle published and that is then marked as published is
// lost when that bundle fails; one that is never marked is published again
// by every bundle. A Ledger holds what each open bundle published as
// pending, under the bundle's Ticket: Confirm once the bundle has finished
// (its last method returned without error), Release when it is known lost
// (it failed, or its DoFn instance is gone), and a later bundle publishes
// the released counts again.
//
// The package knows nothing of Beam: counts are vectors of int64 whose
// meaning the caller fixes.
package ledger

import (
	"sync"
	"sync/atomic"
)

// Ticket names one bundle of one DoFn instance. The zero Ticket publishes
// without a bundle to wait for: Take confirms at once.
type Ticket uint64

var lastTicket atomic.Uint64

// NewTicket returns a Ticket that no other call returned in this process.
func NewTicket() Ticket { return Ticket(lastTicket.Add(1)) }

// Ledger is one source's counts, of a fixed length, as published so far.
// Its methods are safe for concurrent use.
type Ledger struct {
	mu        sync.Mutex
	confirmed []int64
	pending   map[Ticket][]int64
}

// New returns a Ledger of vectors of n counts.
func New(n int) *Ledger {
	return &Ledger{confirmed: make([]int64, n), pending: map[Ticket][]int64{}}
}

// Take returns the part of total, the source's counts now, that is neither
// confirmed nor pending in any bundle, for bundle t to publish, and holds
// it pending under t (confirmed at once for the zero Ticket). Counts that
// went down (a source that was reset) give a zero delta, never a negative
// one. total must have the Ledger's length.
func (l *Ledger) Take(t Ticket, total []int64) (delta []int64, any bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delta = make([]int64, len(l.confirmed))
	for i := range delta {
		held := l.confirmed[i]
		for _, p := range l.pending {
			held += p[i]
		}
		if d := total[i] - held; d > 0 {
			delta[i], any = d, true
		}
	}
	if !any {
		return delta, false
	}
	if t == 0 {
		add(l.confirmed, delta)
		return delta, true
	}
	p := l.pending[t]
	if p == nil {
		p = make([]int64, len(delta))
		l.pending[t] = p
	}
	add(p, delta)
	return delta, true
}

// Confirm makes what bundle t published final.
func (l *Ledger) Confirm(t Ticket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.pending[t]; ok {
		add(l.confirmed, p)
		delete(l.pending, t)
	}
}

// Release drops what bundle t published, for a later bundle to publish
// again.
func (l *Ledger) Release(t Ticket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, t)
}

func add(to, d []int64) {
	for i := range d {
		to[i] += d[i]
	}
}

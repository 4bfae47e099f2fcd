package worker

// The counts a transform's per-process object keeps off the bundle's
// goroutines (events, batch requests) until a bundle publishes them
// (publish.go).

import (
	"sync"

	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// eventCounts counts a transform's events that happen on the pool's
// goroutines, where Beam metrics cannot be updated (an attempt begins,
// succeeds, is retried, reports progress), in one worker process, with or
// without a listener; and the work a failed bundle dropped, whose own
// counter updates the runner discards. The retries decided by callbacks on
// unbounded input are counted here too, so that one count means one thing
// on both paths.
type eventCounts struct {
	mu     sync.Mutex
	total  eventTally
	ledger *ledger.Ledger
}

// eventTally is one count per event type that eventCounts counts.
type eventTally struct{ started, succeeded, retried, rescheduled, progress, abandoned int64 }

func (t eventTally) vector() []int64 {
	return []int64{t.started, t.succeeded, t.retried, t.rescheduled, t.progress, t.abandoned}
}

// batchStats counts a transform's requests in a worker process, for the
// metrics (published at callbacks, like the guard's): the counts through a
// ledger, the sizes for the distribution as they come (a failed bundle's
// samples of it are lost).
type batchStats struct {
	mu              sync.Mutex
	requests, items int64
	sizes           []int64 // sizes of the requests made since the last publish
	published       *ledger.Ledger
}

func (b *batchStats) observe(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests++
	b.items += int64(n)
	b.sizes = append(b.sizes, int64(n))
}

// drain returns the counts now and the sizes since the last drain.
func (b *batchStats) drain() (counts, sizes []int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sizes
	b.sizes = nil
	return []int64{b.requests, b.items}, s
}

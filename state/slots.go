package state

import (
	"container/heap"
	"context"
	"sync"
)

// slotQueue hands out the pool's parallelism slots by priority: when tasks
// wait for a slot, the one with the highest priority gets the next free one,
// and tasks of equal priority get them in the order they were queued. A task
// queues when it is started (see Pool.start), not when its goroutine happens
// to run, so that order is the order of Submit calls.
type slotQueue struct {
	mu      sync.Mutex
	free    int
	seq     uint64
	waiting waiters
}

func newSlotQueue(n int) *slotQueue { return &slotQueue{free: n} }

// slotWaiter is one queued claim on a slot. ready is closed when the slot is
// granted; from then on the holder must release it.
type slotWaiter struct {
	priority  int
	seq       uint64
	ready     chan struct{}
	granted   bool
	abandoned bool
}

// enqueue claims a slot for a task of the given priority. The claim is
// granted at once when a slot is free and nobody waits.
func (q *slotQueue) enqueue(priority int) *slotWaiter {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	w := &slotWaiter{priority: priority, seq: q.seq, ready: make(chan struct{})}
	if q.free > 0 && q.waiting.Len() == 0 {
		q.free--
		w.granted = true
		close(w.ready)
		return w
	}
	heap.Push(&q.waiting, w)
	return w
}

// wait blocks until w is granted (nil) or ctx ends (ctx.Err()); in the latter
// case the claim is withdrawn, and a slot granted meanwhile passes on.
func (q *slotQueue) wait(ctx context.Context, w *slotWaiter) error {
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	if !w.granted {
		w.abandoned = true // skipped by release
		q.mu.Unlock()
		return ctx.Err()
	}
	q.mu.Unlock()
	q.release()
	return ctx.Err()
}

// release returns one slot: to the best waiter, or to the free count.
func (q *slotQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.waiting.Len() > 0 {
		w := heap.Pop(&q.waiting).(*slotWaiter)
		if w.abandoned {
			continue
		}
		w.granted = true
		close(w.ready)
		return
	}
	q.free++
}

// waiters is a heap: highest priority first, then lowest sequence number.
type waiters []*slotWaiter

func (h waiters) Len() int { return len(h) }
func (h waiters) Less(i, j int) bool {
	if h[i].priority != h[j].priority {
		return h[i].priority > h[j].priority
	}
	return h[i].seq < h[j].seq
}
func (h waiters) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *waiters) Push(x any)   { *h = append(*h, x.(*slotWaiter)) }
func (h *waiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}

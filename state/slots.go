package state

import (
	"container/heap"
	"context"
	"sync"
)

// runQueue decides when admitted tasks run. A buffered task needs a buffer
// place (at most Buffer tasks are in flight: waiting for a slot or running)
// and then a parallelism slot; an unbuffered task (a drain's) needs only the
// slot. At both stages, waiting tasks are served highest priority first,
// equal priorities in the order they were queued. A task queues when it is
// started (see Pool.start), not when its goroutine happens to run, so that
// order is the order of the Submit calls.
type runQueue struct {
	mu          sync.Mutex
	freePlaces  int
	freeSlots   int
	seq         uint64
	needPlace   waiters // buffered tasks without a buffer place
	needSlot    waiters // tasks that may run once a slot frees
	placesTaken int     // for tests and gauges
}

func newRunQueue(buffer, parallelism int) *runQueue {
	return &runQueue{freePlaces: buffer, freeSlots: parallelism}
}

// claim is one task's place in the queue. ready is closed (by a new channel
// for each attempt) when the task may run its attempt.
type claim struct {
	priority  int
	seq       uint64
	buffered  bool
	hasPlace  bool
	ready     chan struct{}
	granted   bool // holds a slot for the current attempt
	abandoned bool // gave up waiting; skipped when popped
}

// enqueue queues a new task for its first attempt.
func (q *runQueue) enqueue(priority int, buffered bool) *claim {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	c := &claim{priority: priority, seq: q.seq, buffered: buffered, ready: make(chan struct{})}
	if !buffered {
		q.askSlot(c)
		return c
	}
	q.askPlace(c)
	return c
}

// askPlace grants c a buffer place (and then asks for a slot) or queues it
// for one; q.mu is held.
func (q *runQueue) askPlace(c *claim) {
	if q.freePlaces > 0 && q.needPlace.Len() == 0 {
		q.freePlaces--
		q.placesTaken++
		c.hasPlace = true
		q.askSlot(c)
		return
	}
	heap.Push(&q.needPlace, c)
}

// pause gives back c's buffer place while its task waits to retry, so that
// a retrying task never keeps another from being in flight.
func (q *runQueue) pause(c *claim) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.givePlace(c)
}

// again queues c for another attempt: a buffered task asks for a place again,
// then for a slot, behind tasks of higher priority at both stages.
func (q *runQueue) again(c *claim) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	c.seq, c.ready, c.granted, c.abandoned = q.seq, make(chan struct{}), false, false
	if !c.buffered {
		q.askSlot(c)
		return
	}
	q.askPlace(c)
}

// askSlot grants c a slot or queues it for one; q.mu is held.
func (q *runQueue) askSlot(c *claim) {
	if q.freeSlots > 0 && q.needSlot.Len() == 0 {
		q.freeSlots--
		c.granted = true
		close(c.ready)
		return
	}
	heap.Push(&q.needSlot, c)
}

// wait blocks until c may run (nil) or ctx ends (ctx.Err()); in the latter
// case the claim is withdrawn, and a slot granted meanwhile passes on.
func (q *runQueue) wait(ctx context.Context, c *claim) error {
	ready := q.readyOf(c)
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	granted := c.granted
	if !granted {
		c.abandoned = true
	}
	q.mu.Unlock()
	if granted {
		q.releaseSlot()
	}
	return ctx.Err()
}

func (q *runQueue) readyOf(c *claim) chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return c.ready
}

// releaseSlot returns a slot after an attempt: to the best task waiting for
// one, or to the free count.
func (q *runQueue) releaseSlot() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.needSlot.Len() > 0 {
		c := heap.Pop(&q.needSlot).(*claim)
		if c.abandoned {
			continue
		}
		c.granted = true
		close(c.ready)
		return
	}
	q.freeSlots++
}

// done ends c's task: its buffer place, if it has one, goes to the best task
// waiting for a place, which then asks for a slot. A task that never got a
// place leaves the queue.
func (q *runQueue) done(c *claim) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !c.hasPlace {
		c.abandoned = true
		return
	}
	q.givePlace(c)
}

// givePlace hands c's buffer place to the best task waiting for one, or back
// to the free count; q.mu is held and c has a place.
func (q *runQueue) givePlace(c *claim) {
	c.hasPlace = false
	q.placesTaken--
	for q.needPlace.Len() > 0 {
		next := heap.Pop(&q.needPlace).(*claim)
		if next.abandoned {
			continue
		}
		next.hasPlace = true
		q.placesTaken++
		q.askSlot(next)
		return
	}
	q.freePlaces++
}

// inFlight returns how many buffer places are taken.
func (q *runQueue) inFlight() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.placesTaken
}

// waiters is a heap: highest priority first, then lowest sequence number.
type waiters []*claim

func (h waiters) Len() int { return len(h) }
func (h waiters) Less(i, j int) bool {
	if h[i].priority != h[j].priority {
		return h[i].priority > h[j].priority
	}
	return h[i].seq < h[j].seq
}
func (h waiters) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *waiters) Push(x any)   { *h = append(*h, x.(*claim)) }
func (h *waiters) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}

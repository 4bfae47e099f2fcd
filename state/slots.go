package state

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// runQueue decides when admitted tasks run. A buffered task needs a buffer
// place (at most Buffer tasks are in flight: waiting for a slot or running)
// and then a parallelism slot; an unbuffered task (see StartUnbuffered) needs only the
// slot. At both stages, waiting tasks are served highest priority first,
// equal priorities in the order they were queued. A task queues when it is
// started (see Pool.start), so that order is the order of the Submit calls.
//
// A task has no goroutine while it waits: the queue starts one, running its
// claim's launch, when it grants the claim a slot, so a pool holding
// thousands of tasks runs at most Parallelism goroutines for them.
type runQueue struct {
	mu         sync.Mutex
	freePlaces int
	// freeSlots is negative after resize took away slots in use: so many
	// releases are absorbed before a slot is granted again.
	freeSlots   int
	slots       int // how many slots there are (see resize)
	seq         uint64
	needPlace   waiters // buffered claims without a buffer place
	needSlot    waiters // claims that may run once a slot frees
	placesTaken int     // for gauges
}

func newRunQueue(buffer, parallelism int) *runQueue {
	return &runQueue{freePlaces: buffer, freeSlots: parallelism, slots: parallelism}
}

// resize sets how many slots there are: more grants them to waiting claims
// at once, fewer takes free ones away and absorbs releases until the
// running attempts fit. Waiting claims keep their order throughout.
func (q *runQueue) resize(n int) {
	q.resizeTo(func() int { return n })
}

// resizeTo is resize to the number limit gives, read under q.mu so that
// concurrent resizes apply in the order they read it.
func (q *runQueue) resizeTo(limit func() int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := limit()
	if n <= 0 || n == q.slots {
		return
	}
	q.freeSlots += n - q.slots
	q.slots = n
	for q.freeSlots > 0 && q.needSlot.Len() > 0 {
		c := heap.Pop(&q.needSlot).(*claim)
		if c.state != queued {
			continue // withdrawn
		}
		q.freeSlots--
		q.grant(c)
	}
}

// claimState is where a claim is.
type claimState int

const (
	queued  claimState = iota // waiting for a place or a slot
	running                   // granted a slot: its attempt runs
	paused                    // waiting out a retry's backoff (or another call), with no place
	gone                      // withdrawn, or its task finished
)

// claim is one task's place in the queue.
type claim struct {
	priority int
	seq      uint64
	buffered bool
	hasPlace bool
	state    claimState
	launch   func()      // runs one attempt; started on its own goroutine when granted a slot
	stopWait func() bool // stops the wait of a paused claim (a backoff's timer)
}

func newClaim(priority int, buffered bool, launch func()) *claim {
	return &claim{priority: priority, buffered: buffered, launch: launch}
}

// enqueue queues a new claim for its first attempt.
func (q *runQueue) enqueue(c *claim) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	c.seq = q.seq
	q.ask(c)
}

// ask queues c for what it lacks: a place (if buffered), then a slot; q.mu
// is held.
func (q *runQueue) ask(c *claim) {
	c.state = queued
	if !c.buffered || c.hasPlace {
		q.askSlot(c)
		return
	}
	if q.freePlaces > 0 && q.needPlace.Len() == 0 {
		q.freePlaces--
		q.placesTaken++
		c.hasPlace = true
		q.askSlot(c)
		return
	}
	heap.Push(&q.needPlace, c)
}

// askSlot grants c a slot, starting its attempt, or queues it for one; q.mu
// is held.
func (q *runQueue) askSlot(c *claim) {
	if q.freeSlots > 0 && q.needSlot.Len() == 0 {
		q.freeSlots--
		q.grant(c)
		return
	}
	heap.Push(&q.needSlot, c)
}

// grant starts c's attempt in the slot it was given; q.mu is held.
func (q *runQueue) grant(c *claim) {
	c.state = running
	go c.launch()
}

// releaseSlot returns a slot after an attempt: to the best claim waiting for
// one, or to the free count.
func (q *runQueue) releaseSlot() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.freeSlots < 0 {
		q.freeSlots++ // a slot taken away by resize
		return
	}
	for q.needSlot.Len() > 0 {
		c := heap.Pop(&q.needSlot).(*claim)
		if c.state != queued {
			continue // withdrawn
		}
		q.grant(c)
		return
	}
	q.freeSlots++
}

// pause gives back c's buffer place while its task waits delay to retry, so
// that a retrying task never keeps another from being in flight; then again
// queues it. It reports false, doing nothing, if the task was cancelled
// meanwhile (ctx): the caller finishes it.
func (q *runQueue) pause(c *claim, ctx context.Context, delay time.Duration) bool {
	return q.pauseOn(c, ctx, func(wake func()) (func() bool, bool) {
		return time.AfterFunc(delay, wake).Stop, false
	})
}

// pauseOn is pause until an event rather than for a delay: register arranges
// for wake to be called once when the event comes, never from within
// register, and returns how to cancel that; or reports ended, the event
// having come already, and c queues again at once.
func (q *runQueue) pauseOn(c *claim, ctx context.Context, register func(wake func()) (stop func() bool, ended bool)) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	q.givePlace(c)
	stop, ended := register(func() { q.again(c) })
	if ended {
		q.seq++
		c.seq = q.seq
		q.ask(c)
		return true
	}
	c.state = paused
	c.stopWait = stop
	return true
}

// again queues a paused claim for its next attempt: a place, then a slot,
// behind claims of higher priority at both stages.
func (q *runQueue) again(c *claim) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if c.state != paused {
		return // withdrawn while its timer fired
	}
	q.seq++
	c.seq = q.seq
	q.ask(c)
}

// withdraw takes back a claim whose task was cancelled, if no attempt of it
// runs, and reports whether it did (the caller then finishes the task); a
// running attempt sees the cancellation itself.
func (q *runQueue) withdraw(c *claim) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch c.state {
	case queued:
		q.givePlace(c)
	case paused:
		c.stopWait()
	default:
		return false
	}
	c.state = gone
	return true
}

// done ends c's task: its buffer place, if it has one, goes to the best
// claim waiting for a place.
func (q *runQueue) done(c *claim) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.givePlace(c)
	c.state = gone
}

// givePlace hands c's buffer place, if it has one, to the best claim waiting
// for one, which then asks for a slot, or back to the free count; q.mu is
// held.
func (q *runQueue) givePlace(c *claim) {
	if !c.hasPlace {
		return
	}
	c.hasPlace = false
	q.placesTaken--
	for q.needPlace.Len() > 0 {
		next := heap.Pop(&q.needPlace).(*claim)
		if next.state != queued {
			continue // withdrawn
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

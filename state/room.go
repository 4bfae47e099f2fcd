package state

// Room for waiting owners: while owners wait for a Hold place, a place that
// frees is kept for the owner that has waited longest, so that an owner
// that looks for room only at its own callbacks is not starved by owners
// that take every freed place at once.

import "container/list"

// roomQueue is the order in which owners waiting for a Hold place get one
// as places free: first come, first served, one place per owner at a time.
// A place granted to an owner is kept (reserved) for it until it takes it or
// leaves; an owner that took its place and still waits queues again, behind
// the others. It is bookkeeping only: the Pool holds the places and the lock.
type roomQueue struct {
	waiting  *list.List               // owners waiting with no place kept, longest waiting first
	at       map[string]*list.Element // each waiting owner's element of waiting
	reserved map[string]bool          // owners a place is kept for
}

func newRoomQueue() roomQueue {
	return roomQueue{waiting: list.New(), at: map[string]*list.Element{}, reserved: map[string]bool{}}
}

// wait makes o wait for a place, behind the owners waiting already; an
// owner that waits already keeps its turn, and one that has a place kept
// for it waits for no other.
func (q *roomQueue) wait(o string) {
	if q.at[o] != nil || q.reserved[o] {
		return
	}
	q.at[o] = q.waiting.PushBack(o)
}

// leave ends o's wait, and reports whether a place was kept for o: the
// caller frees it.
func (q *roomQueue) leave(o string) (kept bool) {
	if e := q.at[o]; e != nil {
		q.waiting.Remove(e)
		delete(q.at, o)
	}
	kept = q.reserved[o]
	delete(q.reserved, o)
	return kept
}

// leaveAll ends every owner's wait, and returns how many places were kept
// for owners: the caller frees them.
func (q *roomQueue) leaveAll() (kept int) {
	kept = len(q.reserved)
	q.waiting.Init()
	clear(q.at)
	clear(q.reserved)
	return kept
}

// grant keeps a freed place for the owner that has waited longest, and
// returns that owner; false: nobody waits, and the place is anyone's.
func (q *roomQueue) grant() (string, bool) {
	e := q.waiting.Front()
	if e == nil {
		return "", false
	}
	o := q.waiting.Remove(e).(string)
	delete(q.at, o)
	q.reserved[o] = true
	return o, true
}

// take uses the place kept for o, and reports whether there was one.
func (q *roomQueue) take(o string) bool {
	if !q.reserved[o] {
		return false
	}
	delete(q.reserved, o)
	return true
}

// keep gives o back a place it took and did not use.
func (q *roomQueue) keep(o string) {
	if e := q.at[o]; e != nil {
		q.waiting.Remove(e)
		delete(q.at, o)
	}
	q.reserved[o] = true
}

// has reports whether o waits or has a place kept for it.
func (q *roomQueue) has(o string) bool { return q.at[o] != nil || q.reserved[o] }

// kept returns how many places are kept for owners.
func (q *roomQueue) kept() int { return len(q.reserved) }

// waiters returns how many owners wait with no place kept for them.
func (q *roomQueue) waiters() int { return q.waiting.Len() }

// Waiting records whether owner o has work that found no Hold place and
// waits for one: on unbounded input, a key's elements queued in bag state,
// which only the key's own callbacks can start. While owners wait, a place
// that frees (a removed task's, or one free when o begins to wait) is not
// anyone's to take: it is kept for the owner that has waited longest, one
// place per owner at a time, and only a Submit of that owner takes it. An
// owner that calls Waiting again while it waits keeps its turn; one that
// took its place and still waits calls it again and waits behind the
// owners waiting then. So an owner that starts what it can at each of its
// callbacks gets a place within as many frees as there are owners waiting
// before it, however quickly others would take freed places.
//
// waiting false ends o's wait and frees the place kept for it, if any. Kept
// places count against Hold like the tasks' (Hold still bounds them all),
// and EvictIdle takes them, and o's turn, from an owner it evicts.
func (p *Pool) Waiting(o string, waiting bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !waiting {
		if p.room.leave(o) {
			p.freeHoldLocked()
		}
		return
	}
	if p.owners[o] == nil {
		p.owners[o] = &owner{tasks: map[ElementID]*Task{}, lastActive: p.cfg.Now()}
	}
	p.room.wait(o)
	for p.room.waiters() > 0 && p.hold.TryAcquire(1) {
		p.room.grant()
	}
}

// HasRoom reports whether a Submit of owner o that does not wait would find
// a Hold place now: one is kept for o (see Waiting), or one is free.
func (p *Pool) HasRoom(o string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.room.reserved[o] || p.buffered+p.room.kept() < p.cfg.Hold
}

// freeHold frees one Hold place; see freeHoldLocked.
func (p *Pool) freeHold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.freeHoldLocked()
}

// freeHoldLocked frees one Hold place: it is kept for the owner that has
// waited longest (see Waiting), or, when nobody waits, given back to the
// pool; p.mu is held.
func (p *Pool) freeHoldLocked() {
	if _, ok := p.room.grant(); !ok {
		p.hold.Release(1)
	}
}

// unusedHold frees the Hold place a Submit of owner o took and did not use:
// kept for o again when it was kept for o (kept), else freed.
func (p *Pool) unusedHold(o string, kept bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if kept {
		p.room.keep(o)
		return
	}
	p.freeHoldLocked()
}

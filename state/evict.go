package state

import "time"

// Taking tasks out of the pool: one at a time, the work of owners gone
// quiet, and work reclaimed for a drain.

// Remove forgets t: it is cancelled if still waiting or running, and its
// Hold place (if any) is freed at once (see Waiting); its Buffer place
// frees when it finishes. A cancelled Work that ignores its
// context keeps its parallelism slot until it returns. Removing a task twice,
// or one the pool no longer holds, does nothing.
func (p *Pool) Remove(t *Task) { p.remove(t) }

// remove is Remove, and reports whether the pool held t.
func (p *Pool) remove(t *Task) bool {
	p.mu.Lock()
	if t.removed || p.tasks[t.Key] != t {
		p.mu.Unlock()
		return false
	}
	t.removed = true
	delete(p.tasks, t.Key)
	if own := p.owners[t.Key.Owner]; own != nil {
		delete(own.tasks, t.Key.Element) // the owner itself is forgotten later (forgetIdle)
	}
	release := t.buffered
	if release {
		p.buffered--
	}
	p.mu.Unlock()
	t.cancel()
	if release {
		p.freeHold()
	}
	return true
}

// EvictIdle removes every task of the owners that have not been touched
// since cutoff, and returns them; it also ends their wait for room and frees
// the places kept for them (see Waiting). Such an owner is gone from this
// worker, or at least quiet: a key that moved to another worker, the bundle
// of a DoFn instance the runner dropped, or a key whose callbacks come late.
// Callers evict for room only (when a live owner needs a place), so a quiet
// key's finished results stay as long as nobody needs their places. An
// evicted element of a key is still in bag state wherever its key lives
// now, and runs again there; an evicted element of a live bundle is started
// again by its bundle: eviction costs a call, never an output.
//
// An owner touched after EvictIdle took its work is alive, only late, by
// as long as it was away: from then on EvictIdle spares it (its tasks, its
// wait and its kept place), whatever the cutoff, until it goes untouched for
// twice that long (at most Config.Gone), so that a late key does not lose
// the call it started again to the next eviction, and the one after, and
// never commit. The owner stays spared while the pool remembers it (while it
// holds tasks, and for Config.Forget after). An element so loses its call to
// eviction at most once, as long as its owner's touches come no further
// apart than twice the lateness it came back from (a runner whose lateness
// keeps growing costs it a call each time it more than doubles, a few
// times before Gone bounds it); a spared owner that moved
// away for good frees its places after that long, not after Gone, so the
// owners waiting for them (see Waiting) get them within a time the runner's
// own lateness sets.
func (p *Pool) EvictIdle(cutoff time.Time) []*Task {
	return p.evict(cutoff, true, func(*Task) bool { return true })
}

// EvictIdleUnbuffered is EvictIdle for the tasks that hold no Hold place
// (StartUnbuffered's), leaving waits for room alone. Eviction for room never
// frees anything by removing them, so without this a moved key's unbuffered
// task would stay for the life of the pool.
func (p *Pool) EvictIdleUnbuffered(cutoff time.Time) []*Task {
	return p.evict(cutoff, false, func(t *Task) bool { return !t.buffered })
}

// Reclaim takes places back for a caller that knows no waiting owner will
// come for a place and the tasks which picks will never be committed (the
// end of unbounded input, when the runner calls no key back): it ends
// every wait for room, frees the places kept (see Waiting), and removes at
// most limit (no limit when limit <= 0) of the tasks that hold a Hold
// place and which picks, whenever their owners were last touched. It
// returns the removed tasks. which is called without the pool's lock, so
// it may read the task; tasks without a place are never offered to it,
// since removing them frees nothing.
func (p *Pool) Reclaim(which func(*Task) bool, limit int) []*Task {
	p.mu.Lock()
	for n := p.room.leaveAll(); n > 0; n-- {
		p.freeHoldLocked() // nobody waits now: the place is free
	}
	placed := make([]*Task, 0, p.buffered)
	for _, t := range p.tasks {
		if t.buffered {
			placed = append(placed, t)
		}
	}
	p.mu.Unlock()
	var removed []*Task
	for _, t := range placed {
		if limit > 0 && len(removed) == limit {
			break
		}
		if which(t) && p.remove(t) {
			removed = append(removed, t)
		}
	}
	return removed
}

// evict removes the tasks that which picks of the owners idle since cutoff
// (see owner.idle), and with room their waits and kept places.
func (p *Pool) evict(cutoff time.Time, room bool, which func(*Task) bool) []*Task {
	now := p.cfg.Now()
	p.mu.Lock()
	var idle []*Task
	freed := 0
	for o, own := range p.owners {
		if !own.idle(cutoff, now) {
			continue
		}
		took := false
		for _, t := range own.tasks {
			if which(t) {
				idle = append(idle, t)
				took = true
			}
		}
		if room && p.room.has(o) {
			if p.room.leave(o) {
				freed++
			}
			took = true
		}
		if took {
			own.lost = true
		}
	}
	for ; freed > 0; freed-- {
		p.freeHoldLocked()
	}
	p.mu.Unlock()
	for _, t := range idle {
		p.Remove(t)
	}
	return idle
}

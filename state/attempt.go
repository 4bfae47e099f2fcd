package state

import (
	"fmt"
	"time"
)

// One attempt of a task on a pool goroutine: the gate, the lookup, the
// call, and what its end leaves (a retry, a result, the latency observed).

// attempt makes one attempt of t, in the slot its claim was granted, once
// the gate (if any) admits it. After a failed attempt that the job's Retry
// wants repeated, it gives back the task's Buffer place and schedules the
// next attempt on a timer, holding neither a goroutine, a slot nor a place
// in flight; the next attempt queues for a place and a slot again. The task
// keeps its Hold place: it is still held in memory. Attempts of one task
// never overlap, so job (the task's own copy) needs no lock.
func (p *Pool) attempt(t *Task, job *Job, c *claim) {
	var abandon func()
	if job.Lookup != nil {
		l := job.Lookup(t.ctx)
		switch {
		case l.Hit || l.Err != nil:
			p.queue.releaseSlot()
			if l.Err != nil {
				t.finishAt(nil, l.Err, p.cfg.Now())
			} else {
				t.finishAt(l.Outputs, nil, p.cfg.Now())
			}
			return
		case l.Wait != nil:
			p.queue.releaseSlot()
			if !p.queue.pauseOn(c, t.ctx, l.Wait) {
				t.finish(nil, fmt.Errorf("cancelled while waiting for the same call of another element: %w", t.ctx.Err()))
			}
			return
		}
		abandon = l.Abandon
	}
	if p.batches != nil {
		p.batches.join(t, job, c, abandon)
		return
	}
	done, ok := p.enter(t, job, c, abandon)
	if !ok {
		return
	}
	start := p.cfg.Now()
	n := t.setRunning(start)
	outputs, err := call(t.ctx, job.Work, n)
	if done != nil {
		done(err)
		p.followLimit()
	}
	p.queue.releaseSlot()
	p.observe(p.cfg.Now().Sub(start))
	p.endAttempt(t, job, c, n, outputs, err)
}

// endAttempt ends attempt n of t, which returned outputs and err, once its slot
// is given back: t finishes, or waits to retry when the job's Retry wants.
func (p *Pool) endAttempt(t *Task, job *Job, c *claim, n int, outputs []any, err error) {
	if err == nil || job.Retry == nil || t.ctx.Err() != nil {
		t.finishAt(outputs, err, p.cfg.Now())
		return
	}
	delay, again := job.Retry(n, err)
	if !again {
		t.finishAt(outputs, err, p.cfg.Now())
		return
	}
	job.Previous = err
	t.setWaiting()
	if !p.queue.pause(c, t.ctx, delay) {
		t.finish(nil, fmt.Errorf("cancelled while waiting to retry: %w", t.ctx.Err()))
	}
}

// followLimit resizes the slots to the gate's limit, if it has one.
func (p *Pool) followLimit() {
	if l, ok := p.gate.(slotLimiter); ok {
		p.calls.resizeTo(func() int { return min(l.Limit(), p.cfg.Parallelism) })
	}
}

// enter passes the gate before an attempt of t. When the gate sends the
// attempt back for later, or the task is cancelled while it waits, enter
// gives back the slot, pauses or finishes the task, and reports false.
func (p *Pool) enter(t *Task, job *Job, c *claim, abandon func()) (done func(error), ok bool) {
	if p.gate == nil {
		return nil, true
	}
	done, later, err := p.gate.Enter(t.ctx, job.Previous)
	if (err != nil || later > 0) && abandon != nil {
		// Before the slot goes: the task's next attempt may start at once
		// after, and must find this one's Lookup ended.
		abandon()
	}
	switch {
	case err == nil && later <= 0:
		return done, true
	case err == nil:
		p.queue.releaseSlot()
		if !p.queue.pause(c, t.ctx, later) {
			t.finish(nil, fmt.Errorf("cancelled while waiting for its retry budget: %w", t.ctx.Err()))
		}
	default:
		p.queue.releaseSlot()
		t.finish(nil, fmt.Errorf("cancelled while waiting to start attempt %d: %w", t.Attempts()+1, err))
	}
	return nil, false
}

// observe folds one duration into the moving average (weight 1/8).
func (p *Pool) observe(d time.Duration) {
	for {
		old := p.latencyNs.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if p.latencyNs.CompareAndSwap(old, next) {
			return
		}
	}
}

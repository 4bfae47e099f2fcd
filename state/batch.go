package state

// Batches: the attempts of many tasks sent as one request (Config.Batch).
// With batches the pool has two kinds of slot. Element slots (as many as
// the buffer) only order the tasks' starts: a task that gets one runs its
// Lookup, joins its group's batch and gives the slot back at once. Call
// slots (Parallelism, or the gate's limit) are taken by requests: a batch
// that is full or whose wait is over queues for one, keeps gathering until
// it has it, passes the gate once and makes one request. So parallelism,
// rate limits and the retry budget count requests, and gathering holds
// nothing but the members' buffer places.

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// BatchConfig makes a Pool send attempts in batches.
type BatchConfig struct {
	// Size is the most items in one request. Must be >= 1.
	Size int
	// Wait is the longest a batch waits for more items after its first
	// joined; zero sends each batch as soon as it has a slot.
	Wait time.Duration
	// Send makes one request. Required.
	Send BatchSend
}

// BatchItem is one task's attempt in a request.
type BatchItem struct {
	// Item is the task's Job.Item.
	Item any
	// Attempt is the task's attempt number, from 1.
	Attempt int
	// Ctx is the task's context: cancelled when the pool gives up the task.
	Ctx context.Context
}

// Outcome is one item's answer in a request.
type Outcome struct {
	Outputs []any
	Err     error
}

// BatchSend makes one request for items (at most Size, in the order their
// tasks joined) and returns one Outcome per item, in the same order; or the
// request's error, when the request failed as a whole: every item's attempt
// fails with it, and the Gate's done sees it. It must return soon after ctx
// is cancelled (when every item's task has been given up). A panic fails
// every item with a *PanicError.
type BatchSend func(ctx context.Context, items []BatchItem) ([]Outcome, error)

func (b *BatchConfig) validate() error {
	switch {
	case b.Size < 1:
		return fmt.Errorf("state: batch size must be >= 1, got %d", b.Size)
	case b.Wait < 0:
		return fmt.Errorf("state: batch wait must be >= 0, got %v", b.Wait)
	case b.Send == nil:
		return errors.New("state: a batch config needs a Send")
	}
	return nil
}

// member is one task's attempt waiting in a batch.
type member struct {
	t       *Task
	job     *Job
	c       *claim
	abandon func()      // the attempt's Lookup.Abandon, or nil
	stop    func() bool // stops listening for the task's cancellation
}

// batch is one request being gathered. It is joinable until it is full or
// taken for its request; it queues for a call slot when it is full or its
// wait is over, and goes on gathering until the slot comes.
type batch struct {
	group   string
	members []*member
	timer   *time.Timer
	queued  bool // queued for a call slot
	taken   bool // its request was made: members left are not in it
}

// batcher gathers the pool's batches, one joinable batch per group at a
// time, and runs their requests in the call slots (calls).
type batcher struct {
	p     *Pool
	cfg   BatchConfig
	calls *runQueue // call slots: Parallelism, or the gate's limit

	mu   sync.Mutex
	open map[string]*batch // joinable batches by group
}

func newBatcher(p *Pool, cfg BatchConfig, slots int) *batcher {
	return &batcher{p: p, cfg: cfg, calls: newRunQueue(0, slots), open: map[string]*batch{}}
}

// join adds the attempt of t (which holds an element slot, given back
// here) to its group's joinable batch, opening one if there is none.
func (b *batcher) join(t *Task, job *Job, c *claim, abandon func()) {
	m := &member{t: t, job: job, c: c, abandon: abandon}
	b.mu.Lock()
	bt := b.open[job.BatchGroup]
	if bt == nil {
		bt = &batch{group: job.BatchGroup}
		b.open[bt.group] = bt
		// The batch counts as the pool's work until its request ends, so
		// that Close waits for it; a member (unfinished) holds the count
		// above zero here.
		b.p.wg.Add(1)
		if b.cfg.Wait > 0 && b.cfg.Size > 1 {
			bt.timer = time.AfterFunc(b.cfg.Wait, func() { b.ready(bt, job.Priority) })
		}
	}
	bt.members = append(bt.members, m)
	if len(bt.members) >= b.cfg.Size {
		delete(b.open, bt.group) // full: the next member opens another
	}
	// A task given up while it waits in the batch leaves it at once, with
	// its buffer place: it is finished here, not by a request.
	m.stop = context.AfterFunc(t.ctx, func() { b.leave(bt, m) })
	ready := len(bt.members) >= b.cfg.Size || b.cfg.Wait <= 0 || b.cfg.Size <= 1
	b.mu.Unlock()
	b.p.queue.releaseSlot()
	if ready {
		b.ready(bt, job.Priority)
	}
}

// leave takes m out of bt if bt's request has not taken it, and finishes
// its task.
func (b *batcher) leave(bt *batch, m *member) {
	b.mu.Lock()
	i := indexOf(bt.members, m)
	if i >= 0 {
		bt.members = append(bt.members[:i], bt.members[i+1:]...)
	}
	// The last member gone from a batch not yet queued: the batch ends
	// here (not on its timer, which may be far off), as if sent empty.
	drop := i >= 0 && len(bt.members) == 0 && !bt.queued && !bt.taken
	if drop {
		bt.taken = true
		if b.open[bt.group] == bt {
			delete(b.open, bt.group)
		}
		if bt.timer != nil {
			bt.timer.Stop()
		}
	}
	b.mu.Unlock()
	if drop {
		b.p.wg.Done()
	}
	if i < 0 {
		return
	}
	if m.abandon != nil {
		m.abandon()
	}
	m.t.finish(nil, fmt.Errorf("cancelled while waiting in a batch: %w", m.t.ctx.Err()))
}

func indexOf(ms []*member, m *member) int {
	for i, x := range ms {
		if x == m {
			return i
		}
	}
	return -1
}

// ready queues bt (once) for a call slot, with the priority of the member
// that made it ready.
func (b *batcher) ready(bt *batch, priority int) {
	b.mu.Lock()
	if bt.queued || bt.taken {
		b.mu.Unlock()
		return
	}
	bt.queued = true
	b.mu.Unlock()
	c := newClaim(priority, false, nil)
	c.launch = func() {
		defer b.p.wg.Done()
		b.send(bt)
	}
	b.calls.enqueue(c)
}

// take closes bt for its request and returns its members; they stop
// listening for their cancellation (the request's context takes over). A
// member whose cancellation is being handled stays, for leave to finish.
func (b *batcher) take(bt *batch) []*member {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt.taken = true
	if b.open[bt.group] == bt {
		delete(b.open, bt.group)
	}
	if bt.timer != nil {
		bt.timer.Stop()
	}
	var sent, leaving []*member
	for _, m := range bt.members {
		if m.stop() {
			sent = append(sent, m)
		} else {
			leaving = append(leaving, m)
		}
	}
	bt.members = leaving
	return sent
}

// send makes bt's request in the call slot it was granted.
func (b *batcher) send(bt *batch) {
	p := b.p
	ms := b.take(bt)
	if len(ms) == 0 {
		b.calls.releaseSlot()
		return
	}
	ctx, cancel := requestContext(p.base, ms)
	defer cancel()
	var done func(error)
	if p.gate != nil {
		var later time.Duration
		var err error
		done, later, err = p.gate.Enter(ctx, previousOf(ms))
		if err != nil || later > 0 {
			b.sendBack(ms, later, err)
			return
		}
	}
	start := p.cfg.Now()
	items := make([]BatchItem, len(ms))
	for i, m := range ms {
		items[i] = BatchItem{Item: m.job.Item, Attempt: m.t.setRunning(start), Ctx: m.t.ctx}
	}
	outcomes, err := sendItems(ctx, b.cfg.Send, items)
	if err == nil && len(outcomes) != len(items) {
		err = fmt.Errorf("state: a batch request of %d items returned %d outcomes", len(items), len(outcomes))
	}
	if done != nil {
		done(err)
		p.followLimit()
	}
	b.calls.releaseSlot()
	p.observe(p.cfg.Now().Sub(start))
	for i, m := range ms {
		o := Outcome{Err: err}
		if err == nil {
			o = outcomes[i]
		}
		p.endAttempt(m.t, m.job, m.c, items[i].Attempt, o.Outputs, o.Err)
	}
}

// requestContext is a child of base that ends when every member's task has
// been given up.
func requestContext(base context.Context, ms []*member) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(base)
	var mu sync.Mutex
	live := len(ms)
	stops := make([]func() bool, len(ms))
	for i, m := range ms {
		stops[i] = context.AfterFunc(m.t.ctx, func() {
			mu.Lock()
			live--
			last := live == 0
			mu.Unlock()
			if last {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// sendBack handles a request the gate did not let through: each member
// gives back its buffer place and queues again after later; or, when the
// request's context ended while the gate held it (err), finishes.
func (b *batcher) sendBack(ms []*member, later time.Duration, err error) {
	for _, m := range ms {
		if m.abandon != nil {
			m.abandon() // before the slot goes: see Pool.enter
		}
	}
	b.calls.releaseSlot()
	for _, m := range ms {
		if err != nil {
			m.t.finish(nil, fmt.Errorf("cancelled while waiting to start attempt %d: %w", m.t.Attempts()+1, err))
			continue
		}
		if !b.p.queue.pause(m.c, m.t.ctx, later) {
			m.t.finish(nil, fmt.Errorf("cancelled while waiting for its retry budget: %w", m.t.ctx.Err()))
		}
	}
}

// previousOf is the error the gate sees for a request: that of the first
// member that is a retry, so that a request carrying retries counts as one.
func previousOf(ms []*member) error {
	for _, m := range ms {
		if m.job.Previous != nil {
			return m.job.Previous
		}
	}
	return nil
}

// sendItems calls send, turning a panic into a *PanicError.
func sendItems(ctx context.Context, send BatchSend, items []BatchItem) (outcomes []Outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			outcomes, err = nil, &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return send(ctx, items)
}

package state

// The Pool: the bounded set of tasks of one transform in one worker process,
// with admission (Submit) and lookup by key and owner. Attempts run in
// attempt.go, owners are tracked in owners.go, tasks leave in evict.go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/asyncbeam/asyncbeam/timers"
)

// Admission says what Submit did with an element.
type Admission int

const (
	// Started: a new task was admitted to the buffer and started.
	Started Admission = iota
	// Existing: a task for the same TaskKey is already known; nothing started.
	Existing
	// NoRoom: the buffer or the hold stayed full for the whole wait;
	// nothing started.
	NoRoom
)

// ErrClosed is returned by Submit after the pool was closed (by Reset).
var ErrClosed = errors.New("state: pool closed")

// Pool runs Work for one async transform in one worker process. It is safe
// for concurrent use. All its goroutines are waited for by Close.
type Pool struct {
	cfg   Config
	queue *runQueue // Buffer places and parallelism slots, granted by priority
	// calls are the slots calls run in: queue's, or with batches the
	// batcher's (queue's slots then only order the tasks' starts).
	calls   *runQueue
	batches *batcher            // nil without Config.Batch
	hold    *semaphore.Weighted // Hold places, taken by buffered tasks until removed
	base    context.Context     // parent of every task context; cancelled by Close
	stop    context.CancelFunc
	wg      sync.WaitGroup
	gate    Gate // nil: every attempt starts as soon as it has a slot

	mu       sync.Mutex
	closed   bool
	tasks    map[TaskKey]*Task
	owners   map[string]*owner
	room     roomQueue // owners waiting for a Hold place, and the places kept for them (Waiting)
	buffered int       // Hold places taken by tasks
	peak     int       // the most Hold places ever taken at once
	swept    time.Time

	latencyNs atomic.Int64 // moving average of Work durations; 0 until one finishes
	live      atomic.Int64 // tasks not finished, removed ones included

	pace timers.Pace // the runner's pace as the pool's users see it
}

// newPool returns an empty pool, or an error naming the invalid setting.
func newPool(cfg Config) (*Pool, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Hold == 0 {
		cfg.Hold = cfg.Buffer
	}
	if cfg.Forget <= 0 {
		cfg.Forget = time.Minute
	}
	if cfg.Gone <= 0 {
		cfg.Gone = 10 * time.Minute
	}
	var gate Gate
	if cfg.Gate != nil {
		gate = cfg.Gate()
	}
	base, stop := context.WithCancel(context.Background())
	slots := cfg.Parallelism
	if l, ok := gate.(slotLimiter); ok && l.Limit() > 0 {
		slots = min(slots, l.Limit())
	}
	p := &Pool{
		gate:   gate,
		cfg:    cfg,
		hold:   semaphore.NewWeighted(int64(cfg.Hold)),
		base:   base,
		stop:   stop,
		tasks:  map[TaskKey]*Task{},
		owners: map[string]*owner{},
		room:   newRoomQueue(),
	}
	if cfg.Batch != nil {
		// Every task with a buffer place may join a batch at once; an
		// unbuffered one holds an element slot only while it joins.
		p.queue = newRunQueue(cfg.Buffer, cfg.Buffer)
		p.batches = newBatcher(p, *cfg.Batch, slots)
		p.calls = p.batches.calls
	} else {
		p.queue = newRunQueue(cfg.Buffer, slots)
		p.calls = p.queue
	}
	return p, nil
}

// Gate returns the pool's gate, or nil.
func (p *Pool) Gate() Gate { return p.gate }

// Lookup returns the task for k, or nil.
func (p *Pool) Lookup(k TaskKey) *Task {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tasks[k]
}

// ForOwner returns the tasks of one owner, in no particular order.
func (p *Pool) ForOwner(o string) []*Task {
	p.mu.Lock()
	defer p.mu.Unlock()
	own := p.owners[o]
	if own == nil {
		return nil
	}
	out := make([]*Task, 0, len(own.tasks))
	for _, t := range own.tasks {
		out = append(out, t)
	}
	return out
}

// InFlight returns how many Buffer places are taken: buffered tasks waiting
// for a slot or running. A task that gives its place back to wait (a
// retry's backoff, another element's call of the same lookup) leaves it.
func (p *Pool) InFlight() int { return p.queue.inFlight() }

// Held returns how many Hold places are taken: buffered tasks in flight,
// queued for a Buffer place, or finished and not yet removed.
func (p *Pool) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buffered
}

// PeakHeld returns the most Hold places taken at once since the pool was
// made: the high-water mark of the memory bound.
func (p *Pool) PeakHeld() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// Len returns how many tasks the pool knows, buffered or not.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tasks)
}

// Pace is where the pool's users record, and read, the runner's pace: one
// per pool, since the pool is shared by every instance of one transform in
// a worker process.
func (p *Pool) Pace() *timers.Pace { return &p.pace }

// ExpectedLatency is a moving average of how long Work has taken, or 0 before
// any has finished.
func (p *Pool) ExpectedLatency() time.Duration {
	return time.Duration(p.latencyNs.Load())
}

// Submit starts job for k unless a task for k exists already (Existing). A
// new task first takes a Hold place: the one kept for k's owner (see
// Waiting), else a free one, waiting at most wait for one (zero: do not
// wait; negative: until ctx ends); if none frees in time, or ctx ends
// first, it reports NoRoom. The Hold place frees when the task is removed.
//
// The started task then waits, on its own goroutine, for a Buffer place
// (freed when it finishes) and a parallelism slot (freed after each
// attempt), so Submit never waits for them. At both stages, waiting tasks
// go by job.Priority, then in the order they were submitted.
func (p *Pool) Submit(ctx context.Context, k TaskKey, wait time.Duration, job Job) (*Task, Admission, error) {
	p.mu.Lock()
	t, closed := p.tasks[k], p.closed
	kept := t == nil && !closed && p.room.take(k.Owner)
	p.mu.Unlock()
	if closed {
		return nil, NoRoom, ErrClosed
	}
	if t != nil {
		return t, Existing, nil
	}
	if !kept && !p.acquireHold(ctx, wait) {
		return nil, NoRoom, nil
	}
	t, existing, err := p.start(k, true, job)
	if t == nil || existing {
		p.unusedHold(k.Owner, kept)
	}
	if existing {
		return t, Existing, nil
	}
	if err != nil {
		return nil, NoRoom, err
	}
	return t, Started, nil
}

func (p *Pool) acquireHold(ctx context.Context, wait time.Duration) bool {
	switch {
	case wait == 0:
		return p.hold.TryAcquire(1)
	case wait < 0:
		return p.hold.Acquire(ctx, 1) == nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return p.hold.Acquire(ctx, 1) == nil
}

// StartUnbuffered starts work for k without taking a Hold or a Buffer place
// (it waits only for a slot), unless a task for k exists already (returned
// with existing true). An ordered key's earliest element uses it: the key's
// held results wait for it, so it must start even when every place is
// taken. One such task per key (see DisplaceUnbuffered) is bounded by the
// keys.
func (p *Pool) StartUnbuffered(k TaskKey, job Job) (t *Task, existing bool, err error) {
	return p.start(k, false, job)
}

// DisplaceUnbuffered removes (cancels) the unbuffered tasks of k's owner
// other than k's own, and returns them. A caller that keeps one unbuffered
// task per owner (an ordered key's earliest element, on unbounded input)
// calls it before starting k's: a callback that started a later element as
// the earliest and then failed leaves that task running, while the retried
// callback finds the earlier element pending again. What the displaced
// tasks ran is the caller's to start again (or to know it was committed).
func (p *Pool) DisplaceUnbuffered(k TaskKey) []*Task {
	p.mu.Lock()
	var displaced []*Task
	if own := p.owners[k.Owner]; own != nil {
		for id, t := range own.tasks {
			if id != k.Element && !t.buffered {
				displaced = append(displaced, t)
			}
		}
	}
	p.mu.Unlock()
	for _, t := range displaced {
		p.Remove(t)
	}
	return displaced
}

// start registers the task and queues its claim for a slot, so that the
// slot order is the order of the calls. The task has no goroutine until the
// queue grants it a slot (see runQueue); it counts in the pool's WaitGroup
// until it finishes.
func (p *Pool) start(k TaskKey, buffered bool, job Job) (*Task, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false, ErrClosed
	}
	if t := p.tasks[k]; t != nil {
		return t, true, nil
	}
	t := newTask(p.base, k, buffered)
	p.tasks[k] = t
	own := p.owners[k.Owner]
	if own == nil {
		own = &owner{tasks: map[ElementID]*Task{}}
		p.owners[k.Owner] = own
	}
	own.tasks[k.Element] = t
	own.lastActive = p.cfg.Now()
	if buffered {
		p.buffered++
		p.peak = max(p.peak, p.buffered)
	}
	p.wg.Add(1)
	p.live.Add(1)
	c := newClaim(job.Priority, buffered, nil)
	c.launch = func() { p.attempt(t, &job, c) }
	t.AfterFinish(func() {
		p.queue.done(c)
		p.live.Add(-1)
		p.wg.Done()
	})
	// A task cancelled while no attempt of it runs (queued, or waiting to
	// retry) is finished here; a running attempt sees its context.
	context.AfterFunc(t.ctx, func() {
		if p.queue.withdraw(c) {
			t.finish(nil, fmt.Errorf("cancelled before its attempt %d ran: %w", t.Attempts()+1, t.ctx.Err()))
		}
	})
	p.queue.enqueue(c)
	return t, false, nil
}

// Unfinished returns how many of the pool's tasks have not finished:
// waiting for a place or a slot, running, or waiting to retry, removed ones
// included (a call that ignores its cancellation runs on after Remove).
// Close waits for exactly these.
func (p *Pool) Unfinished() int { return int(p.live.Load()) }

// Close cancels every task, refuses new ones, and waits until all the pool's
// goroutines have returned or ctx ends (then it returns ctx.Err(); the
// goroutines still finish on their own). It closes the gate, if that is an
// io.Closer, either way.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.stop()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return p.closeGate()
	case <-ctx.Done():
		// Calls still running may find the gate closed (a shared rate then
		// falls back to its local share); what it holds is released now.
		p.closeGate()
		return ctx.Err()
	}
}

// closeGate closes the gate if it is an io.Closer.
func (p *Pool) closeGate() error {
	if c, ok := p.gate.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

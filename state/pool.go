package state

// The Pool: the bounded set of tasks of one transform in one worker process,
// with admission (Submit), lookup by key and owner, and eviction of the
// tasks of owners gone from the worker.

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

// Config sizes a Pool.
type Config struct {
	// Parallelism is the most calls running at once. Must be > 0.
	Parallelism int
	// Buffer is the most buffered tasks in flight (waiting for a slot or
	// running, or waiting to retry) at once; other admitted tasks wait for a
	// place. Must be >= 1.
	Buffer int
	// Hold is the most buffered tasks held at once: in flight, or finished
	// and not yet removed (their results wait for a commit). It bounds
	// memory. Zero means Buffer; otherwise it must be >= Buffer.
	Hold int
	// Now is the pool's clock: of Touch, EvictIdle and the durations of
	// calls (ExpectedLatency); nil means time.Now.
	Now func() time.Time
	// Forget is how long the pool remembers an owner that holds no task
	// (see Touch); zero means a minute.
	Forget time.Duration
	// Gone is the longest an owner that came back after EvictIdle took its
	// work may go untouched before EvictIdle takes its work again (see
	// EvictIdle); zero means ten minutes. An owner whose work EvictIdle
	// took is remembered that long after its last touch, so that it is
	// spared if it comes back.
	Gone time.Duration
	// Gate, if not nil, makes the gate every attempt passes before its call
	// (see Gate); newPool calls it once.
	Gate func() Gate
	// Batch, if not nil, sends attempts in batches (see BatchConfig): then
	// Parallelism and the Gate count requests, and Job.Work is not used.
	Batch *BatchConfig
}

// Gate admits the attempts of calls: the policies that protect the called
// service (transforms/guard). Enter runs in the attempt's parallelism slot,
// before the call; previous is the error of the element's attempt before
// this one (nil for its first). It either returns done, which the pool calls
// with the attempt's error once the call returns, still in the attempt's
// slot (done may block a while to keep the slot, and returns when ctx
// ends); or later > 0, and the
// attempt is not made now: the task gives back its slot and its buffer
// place, waits that long and queues again; or the error of ctx (the task's)
// if it ended while Enter waited. A Gate that is an io.Closer is closed with
// the pool. A Gate with a method Limit() int (> 0) sets how many of the
// pool's Parallelism slots attempts may use: the pool reads it when made and
// after every attempt, and waiting tasks keep their priority order. With
// Config.Batch, an attempt is a request: ctx is the request's (it ends when
// every task in it has), previous is the error of its first task that is a
// retry, and done sees the request's own error (not its items').
type Gate interface {
	Enter(ctx context.Context, previous error) (done func(error), later time.Duration, err error)
}

// slotLimiter is a Gate that limits the slots.
type slotLimiter interface{ Limit() int }

func (c Config) validate() error {
	if c.Parallelism <= 0 {
		return fmt.Errorf("state: parallelism must be > 0, got %d", c.Parallelism)
	}
	if c.Buffer <= 0 {
		return fmt.Errorf("state: buffer must be > 0, got %d", c.Buffer)
	}
	if c.Hold != 0 && c.Hold < c.Buffer {
		return fmt.Errorf("state: hold %d must be >= the buffer %d", c.Hold, c.Buffer)
	}
	if c.Batch != nil {
		return c.Batch.validate()
	}
	return nil
}

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

// owner is the set of tasks one owner holds, when it last showed it is
// alive (see Touch and EvictIdle), and when its elements came.
type owner struct {
	tasks      map[ElementID]*Task
	lastActive time.Time
	arrivals   Arrivals
	// lost: EvictIdle took work of the owner since its last touch; spared:
	// the owner came back after that, and EvictIdle spares its work until
	// it goes untouched for twice as long as it was away then, at most
	// Config.Gone (spareFor).
	lost, spared bool
	spareFor     time.Duration
}

// idle reports whether EvictIdle takes the owner's work at now: it was not
// touched since cutoff, nor, if it is spared, for its spareFor.
func (own *owner) idle(cutoff, now time.Time) bool {
	return own.lastActive.Before(cutoff) && (!own.spared || now.Sub(own.lastActive) > own.spareFor)
}

// spare marks an owner that EvictIdle took work from and that was touched
// again at now after being away since lastActive: its work is spared while
// its touches come at most twice that far apart (at most gone), so that a
// key whose callbacks come late does not lose its call to every eviction,
// and one that moved away for good frees its places after a wait set by
// its own lateness, not by the longest a runner may lag.
func (own *owner) spare(now time.Time, gone time.Duration) {
	own.lost, own.spared = false, true
	own.spareFor = min(2*now.Sub(own.lastActive), gone)
}

// Arrivals is what a pool remembers of when an owner's elements came: at
// most one arrival per Touch, so for a key touched once per bundle, when
// the bundles that brought its elements ran.
type Arrivals struct {
	// Last is when the owner's latest element came (zero: none remembered).
	Last time.Time
	// Gaps is how many gaps between elements the figures below are made
	// of: while it is zero they mean nothing.
	Gaps int
	// Gap is the time between its latest two elements, and MeanGap the mean
	// time between its elements, each new gap weighing a quarter (an
	// exponential moving average).
	//
	// A runner under load hands a key's elements over in bursts, leaving
	// gaps far shorter and far longer than the key's rate: MeanGap is the
	// rate, Gap says whether the key just changed pace.
	Gap, MeanGap time.Duration
}

// Arrive records an element at now.
func (a *Arrivals) Arrive(now time.Time) {
	if !a.Last.IsZero() {
		a.Gap = now.Sub(a.Last)
		if a.Gaps == 0 {
			a.MeanGap = a.Gap
		} else {
			a.MeanGap += (a.Gap - a.MeanGap) / 4
		}
		a.Gaps++
	}
	a.Last = now
}

// Touch records that owner o is alive: its key was called back on this
// worker, or its bundle is still running; element says the callback brought
// an element. It returns the owner's arrivals before this touch, and after
// it (the same, unless element). Owners whose tasks are not touched for a
// while are evicted by EvictIdle; an owner without tasks is remembered for
// Config.Forget after its last touch.
func (p *Pool) Touch(o string, element bool) (before, after Arrivals) {
	now := p.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgetIdle(now)
	own := p.owners[o]
	if own == nil {
		own = &owner{tasks: map[ElementID]*Task{}}
		p.owners[o] = own
	}
	if own.lost { // alive after all, only late: see EvictIdle
		own.spare(now, p.cfg.Gone)
	}
	before, own.lastActive = own.arrivals, now
	if element {
		own.arrivals.Arrive(now)
	}
	return before, own.arrivals
}

// forgetIdle drops, at most once a second, the owners that hold no task, do
// not wait for room (see Waiting) and were not touched for Config.Forget, or
// for Config.Gone if EvictIdle took their work; p.mu is held.
func (p *Pool) forgetIdle(now time.Time) {
	if now.Sub(p.swept) < time.Second {
		return
	}
	p.swept = now
	for o, own := range p.owners {
		if len(own.tasks) > 0 || p.room.has(o) {
			continue
		}
		forget := p.cfg.Forget
		if own.lost {
			forget = max(forget, p.cfg.Gone)
		}
		if now.Sub(own.lastActive) > forget {
			delete(p.owners, o)
		}
	}
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

// Job is what Submit runs for one element.
type Job struct {
	// Work is one attempt of the element's call. Required, but with
	// Config.Batch (then BatchSend makes the calls).
	Work Work
	// Retry, if not nil, lets the task try again in this process after a
	// failed attempt (see Retry); the task finishes only with its final
	// outcome.
	Retry Retry
	// Priority orders the start of tasks waiting for a parallelism slot:
	// higher first, equal priorities in the order they were submitted.
	Priority int
	// Previous is the error of the element's last attempt before this
	// task (a retry started from bag state), or nil; the Gate sees it.
	Previous error
	// Lookup, if not nil, runs before each attempt, in its slot and before
	// the Gate: a result cache (see Lookup). With batches it runs before
	// the task joins a batch.
	Lookup func(ctx context.Context) Lookup
	// Item is what a batch request carries for the task (BatchItem.Item),
	// and BatchGroup the batches it may join: tasks of one group only are
	// sent together. Used with Config.Batch only.
	Item       any
	BatchGroup string
}

// Lookup is what a Job's Lookup says about an attempt about to be made.
type Lookup struct {
	// Hit: the attempt is not made; the task finishes with Outputs (no
	// Gate, no call, no retry).
	Hit     bool
	Outputs []any
	// Err, if not nil: the attempt is not made; the task finishes with Err
	// (no Gate, no call, no retry).
	Err error
	// Wait, if not nil: the attempt is not made now (the same call is in
	// flight for another task). The task gives back its slot and its
	// buffer place; Wait arranges for wake to be called once when it
	// should look up again (never from within Wait) and returns how to
	// cancel that, or reports ended if that time has come already.
	Wait func(wake func()) (stop func() bool, ended bool)
	// Abandon, if not nil, is called when the attempt goes on but does not
	// reach its call (the Gate sent it back, or its task ended first): the
	// Lookup's promise to make the call is off.
	Abandon func()
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

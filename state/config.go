package state

import (
	"context"
	"fmt"
	"time"
)

// A pool's configuration, its gate, and what one element's task runs
// (Job) and asks before each attempt (Lookup).

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

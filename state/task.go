package state

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Work is one attempt of an element's call (attempt counts from 1 within
// the task): it returns the element's outputs, or an error. It must return
// soon after ctx is cancelled; until it returns it keeps its pool slot.
type Work func(ctx context.Context, attempt int) ([]any, error)

// Retry decides, after attempt number attempt failed with err, whether the
// task tries again and after what delay. A task without a Retry finishes
// with its first attempt's result. The delay is waited for on a timer, with
// no goroutine and no pool slot held.
type Retry func(attempt int, err error) (delay time.Duration, again bool)

// Status is where a Task is in its life.
type Status int

const (
	// Waiting: admitted, waiting for a parallelism slot, or in one for the
	// pool's Gate to let its attempt start.
	Waiting Status = iota
	// Running: holds a slot and is calling its Work.
	Running
	// Finished: its Work returned (or it was cancelled before starting);
	// Result is ready.
	Finished
)

func (s Status) String() string {
	switch s {
	case Waiting:
		return "waiting"
	case Running:
		return "running"
	case Finished:
		return "finished"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Task is the local record of one element's work: a future for its outputs.
type Task struct {
	Key TaskKey

	ctx      context.Context
	cancel   context.CancelFunc
	buffered bool // holds one of the pool's buffer places until removed
	done     chan struct{}

	mu       sync.Mutex
	status   Status
	outputs  []any
	err      error
	started  time.Time // start of the latest attempt
	finished time.Time // when it finished, by the pool's clock
	first    time.Time // start of the first attempt
	attempts int       // attempts started
	progress float64   // latest progress the running call reported, 0..1
	reports  int       // how many times progress was reported
	after    []func()
	removed  bool
	// interrupted: its context was cancelled (by the pool) when it finished.
	interrupted bool
	// cut: it was interrupted during an attempt (not while it waited for
	// the next one), so its latest attempt did not run to its end.
	cut bool
}

func newTask(parent context.Context, k TaskKey, buffered bool) *Task {
	ctx, cancel := context.WithCancel(parent)
	t := &Task{Key: k, cancel: cancel, buffered: buffered, done: make(chan struct{})}
	t.ctx = context.WithValue(ctx, taskContextKey{}, t)
	return t
}

type taskContextKey struct{}

// TaskFromContext returns the task whose Work was given ctx (or a context
// derived from it), or nil.
func TaskFromContext(ctx context.Context) *Task {
	t, _ := ctx.Value(taskContextKey{}).(*Task)
	return t
}

// Done is closed when the task has finished.
func (t *Task) Done() <-chan struct{} { return t.done }

// ErrInterrupted is wrapped by the error of every task that its pool
// cancelled (Remove, Close) before it finished. Whatever its Work returned
// then (a Work that returns nil when its context is cancelled is common), the
// outcome is not the element's: an interrupted task never reads as a
// success, so nobody commits an element without its outputs.
var ErrInterrupted = errors.New("state: the task was interrupted by its pool before it finished")

// Interrupted reports whether the task was cancelled by its pool (Remove,
// Close) before it finished: its outcome is not the element's, and its error
// wraps ErrInterrupted.
func (t *Task) Interrupted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.interrupted
}

// Status reports where the task is.
func (t *Task) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

// Result returns the task's outputs and error. Before the task has finished
// it returns nil, nil.
func (t *Task) Result() ([]any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.outputs, t.err
}

// StartedAt is when the task's latest attempt began, or the zero time.
func (t *Task) StartedAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started
}

// RunningFor is how long, at now on the pool's clock (Config.Now), the
// task's current attempt has been calling its Work, or zero while it is
// not (waiting for a slot, finished) or started after now.
func (t *Task) RunningFor(now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status != Running || t.started.IsZero() {
		return 0
	}
	return max(now.Sub(t.started), 0)
}

// Attempts returns how many attempts the task has started.
func (t *Task) Attempts() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.attempts
}

// CompletedAttempts returns how many attempts ran to their end: those
// started, less the one an interruption cut short (none when the task was
// interrupted while it waited for its next attempt). An element started
// again after an interruption counts these as done.
func (t *Task) CompletedAttempts() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut {
		return t.attempts - 1
	}
	return t.attempts
}

// FinishedAt is when the task finished, by the pool's clock, or the zero time.
func (t *Task) FinishedAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.finished
}

// FirstStartedAt is when the task's first attempt began, or the zero time.
func (t *Task) FirstStartedAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.first
}

// SetProgress records the latest progress (0..1) reported by the task's
// call.
func (t *Task) SetProgress(fraction float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.progress = fraction
	t.reports++
}

// Progress returns the latest progress SetProgress recorded and how many
// reports there were (zero: none, and the fraction means nothing).
func (t *Task) Progress() (fraction float64, reports int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.progress, t.reports
}

// setRunning records the start of an attempt and returns its number.
func (t *Task) setRunning(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.status = Running
	t.started = now
	if t.attempts == 0 {
		t.first = now
	}
	t.attempts++
	return t.attempts
}

// setWaiting marks the task as waiting for its next attempt.
func (t *Task) setWaiting() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.status = Waiting
}

// AfterFinish runs fn once the task has finished (at once if it has), on
// the goroutine that finishes it, before Done is closed.
func (t *Task) AfterFinish(fn func()) {
	t.mu.Lock()
	if t.status != Finished {
		t.after = append(t.after, fn)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	fn()
}

// finishAt is finish, stamped with the time it finished.
func (t *Task) finishAt(outputs []any, err error, now time.Time) {
	t.mu.Lock()
	t.finished = now
	t.mu.Unlock()
	t.finish(outputs, err)
}

func (t *Task) finish(outputs []any, err error) {
	t.mu.Lock()
	wasRunning := t.status == Running
	t.status = Finished
	if t.interrupted = t.ctx.Err() != nil; t.interrupted {
		t.cut = wasRunning
		outputs = nil
		if err == nil {
			err = ErrInterrupted
		} else if !errors.Is(err, ErrInterrupted) {
			err = fmt.Errorf("%w: %w", ErrInterrupted, err)
		}
	}
	t.outputs, t.err = outputs, err
	after := t.after
	t.after = nil
	t.mu.Unlock()
	// AfterFinish work (the pool's release of the task's Buffer place) runs
	// first, so that whoever sees the task done also sees its place free.
	for _, fn := range after {
		fn()
	}
	close(t.done)
}

// PanicError is a panic recovered from user code, kept with its stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// call runs one attempt of work, turning a panic into a *PanicError.
func call(ctx context.Context, work Work, attempt int) (outputs []any, err error) {
	defer func() {
		if r := recover(); r != nil {
			outputs, err = nil, &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return work(ctx, attempt)
}

package cache

import (
	"context"
	"errors"
	"sync"
)

// Flight joins the copies of a key that are being called right now: the
// first to Join leads (it makes the call and reports it with Finish, or
// gives up with Abandon), the others follow (they wait on the Call, holding
// nothing of the caller's: no slot, no goroutine if they select on Done).
// Safe for concurrent use.
type Flight struct {
	mu    sync.Mutex
	calls map[Key]*Call
}

// Call is one call in flight, shared by its leader and its followers.
type Call struct {
	done      chan struct{}
	value     []byte
	err       error
	followers int // joined after the leader; read under Flight.mu

	mu    sync.Mutex
	wakes map[uint64]func() // OnDone's, until the call ends
	next  uint64
}

// ErrAbandoned is a followed call whose leader gave up without an outcome
// (its element's bundle failed, say): a follower joins again, and the first
// to do so leads a new call.
var ErrAbandoned = errors.New("cache: the call this element waited for was given up; call again")

// Join returns the call of k in flight and false, or a new one and true:
// the caller leads it and must end it with Finish or Abandon.
func (f *Flight) Join(k Key) (c *Call, leader bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.calls[k]; ok {
		c.followers++
		return c, false
	}
	if f.calls == nil {
		f.calls = map[Key]*Call{}
	}
	c = &Call{done: make(chan struct{})}
	f.calls[k] = c
	return c, true
}

// Finish ends the call c of k with its outcome: its followers get the same
// value, or the same error (as an attempt of their own: a retry joins
// again). It returns how many followed.
func (f *Flight) Finish(k Key, c *Call, value []byte, err error) int {
	return f.end(k, c, value, err)
}

// Abandon ends the call c of k without an outcome: its followers get
// ErrAbandoned. It returns how many followed.
func (f *Flight) Abandon(k Key, c *Call) int { return f.end(k, c, nil, ErrAbandoned) }

func (f *Flight) end(k Key, c *Call, value []byte, err error) int {
	f.mu.Lock()
	select {
	case <-c.done:
		f.mu.Unlock()
		return 0 // ended already
	default:
	}
	if f.calls[k] == c {
		delete(f.calls, k)
	}
	c.value, c.err = value, err
	c.mu.Lock()
	close(c.done)
	wakes := c.wakes
	c.wakes = nil
	c.mu.Unlock()
	n := c.followers
	f.mu.Unlock()
	// Not under a lock: a wake may take its caller's locks.
	for _, wake := range wakes {
		wake()
	}
	return n
}

// OnDone arranges for wake to be called once when the call ends, never from
// within OnDone, and returns how to cancel that (stop reports whether it
// did); or reports ended, the call having ended already, and arranges
// nothing. It lets a follower wait without a goroutine (state.Lookup.Wait).
func (c *Call) OnDone(wake func()) (stop func() bool, ended bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		return nil, true
	default:
	}
	if c.wakes == nil {
		c.wakes = map[uint64]func(){}
	}
	id := c.next
	c.next++
	c.wakes[id] = wake
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.wakes[id]
		delete(c.wakes, id)
		return ok
	}, false
}

// InFlight returns the calls in flight now.
func (f *Flight) InFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// Done is closed when the call ends; then Result gives its outcome.
func (c *Call) Done() <-chan struct{} { return c.done }

// Result returns the outcome of an ended call (see Done).
func (c *Call) Result() ([]byte, error) {
	<-c.done
	return c.value, c.err
}

// Wait waits for the call to end, or for ctx to (then it returns ctx's
// error; the call goes on for the others).
func (c *Call) Wait(ctx context.Context) ([]byte, error) {
	select {
	case <-c.done:
		return c.value, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

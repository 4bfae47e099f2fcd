package cache

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestFlightFollowersGetTheLeadersOutcome(t *testing.T) {
	for _, tc := range []struct {
		name    string
		end     func(f *Flight, k Key, c *Call) int
		wantV   []byte
		wantErr error
	}{
		{"a value", func(f *Flight, k Key, c *Call) int { return f.Finish(k, c, []byte("v"), nil) }, []byte("v"), nil},
		{"an error", func(f *Flight, k Key, c *Call) int { return f.Finish(k, c, nil, errBoom) }, nil, errBoom},
		{"given up", func(f *Flight, k Key, c *Call) int { return f.Abandon(k, c) }, nil, ErrAbandoned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Flight
			k := key("k")
			lead, leader := f.Join(k)
			if !leader {
				t.Fatal("the first Join does not lead")
			}
			const n = 5
			var wg sync.WaitGroup
			results := make(chan error, n)
			for i := 0; i < n; i++ {
				c, leads := f.Join(k)
				if leads || c != lead {
					t.Fatalf("Join %d while in flight: leader %v, same call %v; want a follower of the same call", i, leads, c == lead)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					v, err := c.Wait(context.Background())
					if !bytes.Equal(v, tc.wantV) || !errors.Is(err, tc.wantErr) {
						results <- errors.Join(errors.New("wrong outcome"), err)
						return
					}
					results <- nil
				}()
			}
			if got := tc.end(&f, k, lead); got != n {
				t.Errorf("followers reported = %d; want %d", got, n)
			}
			wg.Wait()
			close(results)
			for err := range results {
				if err != nil {
					t.Errorf("a follower: %v; want %q, %v", err, tc.wantV, tc.wantErr)
				}
			}
			if f.InFlight() != 0 {
				t.Errorf("in flight after the end = %d; want 0", f.InFlight())
			}
			if _, leads := f.Join(k); !leads {
				t.Error("a Join after the end follows; want it to lead a new call")
			}
			if got := tc.end(&f, k, lead); got != 0 {
				t.Errorf("ending an ended call reported %d followers; want 0", got)
			}
		})
	}
}

var errBoom = errors.New("boom")

func TestFlightWaitEndsWithItsContext(t *testing.T) {
	var f Flight
	k := key("k")
	lead, _ := f.Join(k)
	c, _ := f.Join(k)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v; want the context's deadline", err)
	}
	f.Finish(k, lead, []byte("v"), nil)
	if v, err := c.Result(); string(v) != "v" || err != nil {
		t.Errorf("Result after the end = %q, %v; want \"v\", nil", v, err)
	}
}

func TestFlightKeysAreIndependent(t *testing.T) {
	var f Flight
	a, leadA := f.Join(key("a"))
	b, leadB := f.Join(key("b"))
	if !leadA || !leadB || a == b {
		t.Fatal("two keys share a call")
	}
	f.Finish(key("a"), a, nil, nil)
	select {
	case <-b.Done():
		t.Error("ending a's call ended b's")
	default:
	}
}

func TestCallOnDone(t *testing.T) {
	var f Flight
	k := key("k")
	lead, _ := f.Join(k)
	c, _ := f.Join(k)
	woken := 0
	_, ended := c.OnDone(func() { woken++ })
	stop, _ := c.OnDone(func() { woken += 100 })
	if ended || woken != 0 {
		t.Fatalf("OnDone before the end: ended %v, woken %d; want false, 0 (never from within OnDone)", ended, woken)
	}
	if !stop() || stop() {
		t.Error("stop: want true once, then false")
	}
	f.Finish(k, lead, []byte("v"), nil)
	if woken != 1 {
		t.Errorf("woken = %d after the end; want 1 (the stopped wake not called)", woken)
	}
	if stop, ended := c.OnDone(func() { woken++ }); !ended || stop != nil || woken != 1 {
		t.Errorf("OnDone after the end: ended %v, stop %v, woken %d; want true, nil, 1", ended, stop != nil, woken)
	}
}

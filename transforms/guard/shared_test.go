package guard

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/integration/redistest"
)

// hammer calls Wait from n goroutines for d and returns the calls let
// through.
func hammer(t *testing.T, r Rate, n int, d time.Duration) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r.Wait(ctx) == nil {
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	return calls.Load()
}

func TestSharedRateIsSharedByItsUsers(t *testing.T) {
	addr := redistest.Addr(t)
	cfg := SharedRateConfig{Addr: addr, Key: "test:" + uuid.NewString(), PerSecond: 200, Burst: 1}
	var rates []*SharedRate
	for i := 0; i < 2; i++ {
		r, err := NewSharedRate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rates = append(rates, r)
	}
	const d = 2 * time.Second
	var a, b int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a = hammer(t, rates[0], 8, d) }()
	go func() { defer wg.Done(); b = hammer(t, rates[1], 8, d) }()
	wg.Wait()
	// The bound is an upper one: a slow machine makes fewer calls, never more.
	if limit := int64(200*d.Seconds()) + 2; a+b > limit {
		t.Errorf("two users made %d + %d = %d calls in %v at 200/s; want at most %d", a, b, a+b, d, limit)
	}
	if a == 0 || b == 0 {
		t.Errorf("calls per user = %d and %d; want both to be served", a, b)
	}
	for i, r := range rates {
		if got := r.Workers(); got != 2 {
			t.Errorf("user %d sees %d users of the bucket; want 2", i, got)
		}
		if got := r.Errors(); got != 0 {
			t.Errorf("user %d counted %d Redis errors; want 0", i, got)
		}
	}
}

func TestSharedRateFallsBackToAShareWithoutRedis(t *testing.T) {
	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, err := NewSharedRate(SharedRateConfig{Addr: addr, Key: "k", PerSecond: 200, Burst: 1, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const d = 2 * time.Second
	got := hammer(t, r, 8, d)
	if limit := int64(200/4*d.Seconds()) + 2; got > limit {
		t.Errorf("calls in %v without Redis = %d; want at most %d (a quarter of 200/s, Workers 4)", d, got, limit)
	}
	if got == 0 {
		t.Error("no call went through without Redis; want the fallback share to let calls through")
	}
	if r.Errors() == 0 {
		t.Error("Errors() = 0; want the failed contacts counted")
	}
}

func TestSharedRateConfigErrorsSayWhatToChange(t *testing.T) {
	for _, tc := range []struct {
		cfg  SharedRateConfig
		want string
	}{
		{SharedRateConfig{Key: "k", PerSecond: 1, Burst: 1}, "Redis address is empty"},
		{SharedRateConfig{Addr: "a:1", PerSecond: 1, Burst: 1}, "bucket key is empty"},
		{SharedRateConfig{Addr: "a:1", Key: "k", Burst: 1}, "rate 0 must be a number > 0"},
		{SharedRateConfig{Addr: "a:1", Key: "k", PerSecond: 1}, "burst 0 must be >= 1"},
	} {
		_, err := NewSharedRate(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSharedRate(%+v) = %v; want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}

func TestSharedRateGivesBackWhatCancelledCallersReserved(t *testing.T) {
	addr := redistest.Addr(t)
	r, err := NewSharedRate(SharedRateConfig{Addr: addr, Key: "test:" + uuid.NewString(), PerSecond: 5, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Wait(context.Background()); err != nil { // the burst
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ { // ten callers that give up: 2 s of the rate reserved
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		r.Wait(ctx)
		cancel()
	}
	start := time.Now()
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The next start is one interval (200 ms) away, not the cancelled
	// callers' 2 s. A slow machine can only shorten the wait from here.
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("the next caller waited %v; want about 200 ms (the cancelled reservations given back)", waited)
	}
}

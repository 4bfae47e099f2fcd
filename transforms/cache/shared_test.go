package cache

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/integration/redistest"
)

func TestSharedConfigValidate(t *testing.T) {
	for _, c := range []SharedConfig{
		{Prefix: "p", TTL: time.Minute},
		{Addr: "127.0.0.1:1", TTL: time.Minute},
		{Addr: "127.0.0.1:1", Prefix: "p", TTL: time.Millisecond},
	} {
		if _, err := NewShared(c); err == nil {
			t.Errorf("NewShared(%+v) = nil error; want one", c)
		}
	}
}

func TestSharedAgainstRedis(t *testing.T) {
	addr := redistest.Addr(t)
	cfg := SharedConfig{Addr: addr, Prefix: "test:" + uuid.NewString(), TTL: time.Second}
	a, err := NewShared(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := NewShared(cfg) // another worker
	defer b.Close()
	ctx := context.Background()
	if _, _, ok := a.Get(ctx, key("k")); ok {
		t.Fatal("a hit in a new prefix")
	}
	a.Set(ctx, key("k"), []byte("value"))
	if v, ttl, ok := b.Get(ctx, key("k")); !ok || string(v) != "value" || ttl <= 0 || ttl > time.Second {
		t.Errorf("the other worker's Get = %q, %v, %v; want \"value\", a time to live in (0, 1s], true", v, ttl, ok)
	}
	b.SetMany(ctx, []Entry{{key("m1"), []byte("one")}, {key("m2"), []byte("two")}})
	for k, want := range map[string]string{"m1": "one", "m2": "two"} {
		if v, _, ok := a.Get(ctx, key(k)); !ok || string(v) != want {
			t.Errorf("after SetMany, Get(%s) = %q, %v; want %q, true", k, v, ok, want)
		}
	}
	time.Sleep(1200 * time.Millisecond) // Redis expires it
	if _, _, ok := b.Get(ctx, key("k")); ok {
		t.Error("a hit after the time to live")
	}
	if st := b.Stats(); st != (SharedStats{Hits: 1, Misses: 1}) {
		t.Errorf("stats = %+v; want 1 hit, 1 miss, no errors", st)
	}
}

func TestSharedOutageIsAMiss(t *testing.T) {
	// A port that refuses: Redis is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, err := NewShared(SharedConfig{Addr: addr, Prefix: "p", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < 100; i++ {
		s.Set(ctx, key("k"), []byte("v"))
		if _, _, ok := s.Get(ctx, key("k")); ok {
			t.Fatal("a hit from a Redis that is down")
		}
	}
	st := s.Stats()
	if st.Errors != 100 || st.Misses != 100 {
		t.Errorf("stats = %+v; want 100 errors and 100 misses: no lookup was answered, the first failed and the next ones found Redis left alone", st)
	}
	if d := time.Since(start); d > downFor {
		t.Errorf("100 lookups during an outage took %v; want them not to wait on Redis", d)
	}
}

// TestSharedErrorsCountLookupsOnly: Errors counts lookups Redis did not
// answer; a store that fails is not a lookup.
func TestSharedErrorsCountLookupsOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, err := NewShared(SharedConfig{Addr: addr, Prefix: "p", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	s.Set(ctx, key("k"), []byte("v"))
	s.SetMany(ctx, []Entry{{key("a"), []byte("1")}, {key("b"), []byte("2")}})
	if st := s.Stats(); st != (SharedStats{}) {
		t.Errorf("after failed stores, stats = %+v; want none: no lookup was made", st)
	}
	for i := 0; i < 3; i++ {
		s.Get(ctx, key("k"))
	}
	if st := s.Stats(); st != (SharedStats{Misses: 3, Errors: 3}) {
		t.Errorf("after 3 lookups, stats = %+v; want 3 misses, each an error", st)
	}
}

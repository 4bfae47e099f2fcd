package cache

import (
	"bytes"
	"testing"
	"time"
)

// clock is a fake clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func key(s string) Key { return KeyOf([]byte(s)) }

func TestNewLocalRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct {
		size int
		ttl  time.Duration
	}{{0, time.Minute}, {-1, time.Minute}, {10, 0}, {10, -time.Second}} {
		if _, err := NewLocal(tc.size, tc.ttl, nil); err == nil {
			t.Errorf("NewLocal(%d, %v) = nil error; want one", tc.size, tc.ttl)
		}
	}
}

func TestLocal(t *testing.T) {
	c := &clock{now: time.Unix(1_000_000, 0)}
	l, err := NewLocal(2, time.Minute, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		advance time.Duration
		add     string // key to add (value = key), or ""
		addTTL  time.Duration
		get     string
		want    string // "" for a miss
	}{
		{name: "empty: a miss", get: "a"},
		{name: "added: a hit", add: "a", get: "a", want: "a"},
		{name: "a second entry", add: "b", get: "b", want: "b"},
		{name: "a third pushes out the least recently used (a)", add: "c", get: "a"},
		{name: "b is still there", get: "b", want: "b"},
		{name: "expired after the time to live", advance: time.Minute, get: "b"},
		{name: "a shorter life for one entry", add: "d", addTTL: 10 * time.Second, get: "d", want: "d"},
		{name: "which ends before the cache's", advance: 10 * time.Second, get: "d"},
		{name: "a longer life is cut to the cache's", add: "e", addTTL: time.Hour, advance: 0, get: "e", want: "e"},
		{name: "so e expires with the cache's", advance: time.Minute, get: "e"},
	}
	for _, s := range steps {
		if s.add != "" {
			l.Add(key(s.add), []byte(s.add), s.addTTL)
		}
		c.now = c.now.Add(s.advance)
		got, ok := l.Get(key(s.get))
		if ok != (s.want != "") || !bytes.Equal(got, []byte(s.want)) {
			t.Errorf("%s: Get(%q) = %q, %v; want %q, %v", s.name, s.get, got, ok, s.want, s.want != "")
		}
	}
	st := l.Stats()
	// Evictions for room only: a for c, c for d, b (expired, not removed) for e.
	want := LocalStats{Hits: 5, Misses: 5, Evictions: 3, Expired: 3}
	if st != want {
		t.Errorf("stats = %+v; want %+v", st, want)
	}
}

func TestKeyOfSeparatesItsParts(t *testing.T) {
	for _, tc := range []struct {
		a, b [][]byte
	}{
		{[][]byte{[]byte("ab"), []byte("c")}, [][]byte{[]byte("a"), []byte("bc")}},
		{[][]byte{[]byte("abc")}, [][]byte{[]byte("abc"), nil}},
		{[][]byte{nil, []byte("x")}, [][]byte{[]byte("x"), nil}},
	} {
		if KeyOf(tc.a...) == KeyOf(tc.b...) {
			t.Errorf("KeyOf(%q) == KeyOf(%q); want different keys", tc.a, tc.b)
		}
	}
	if KeyOf([]byte("a"), []byte("b")) != KeyOf([]byte("a"), []byte("b")) {
		t.Error("KeyOf is not a function of its parts")
	}
}

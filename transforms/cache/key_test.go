package cache

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/integration/redistest"
)

func TestNamespaceOf(t *testing.T) {
	a := NamespaceOf([]byte("type"), []byte("example.com/svc.Profiles"), []byte(`{"URL":"http://profiles"}`))
	for _, tc := range []struct {
		name  string
		parts [][]byte
		same  bool
	}{
		{"the same parts", [][]byte{[]byte("type"), []byte("example.com/svc.Profiles"), []byte(`{"URL":"http://profiles"}`)}, true},
		{"another configuration", [][]byte{[]byte("type"), []byte("example.com/svc.Profiles"), []byte(`{"URL":"http://sellers"}`)}, false},
		{"the parts cut elsewhere", [][]byte{[]byte("typeexample.com/svc.Profiles"), []byte(`{"URL":"http://profiles"}`)}, false},
	} {
		if got := NamespaceOf(tc.parts...); (got == a) != tc.same {
			t.Errorf("%s: %s beside %s; want equal: %v", tc.name, got, a, tc.same)
		}
	}
	if b, err := hex.DecodeString(a); err != nil || len(b) != 8 {
		t.Errorf("NamespaceOf = %q; want 16 hex digits", a)
	}
}

func TestSharedKeyHasNamespace(t *testing.T) {
	k := key("k")
	for _, tc := range []struct {
		cfg  SharedConfig
		want string
	}{
		{SharedConfig{Prefix: "profiles"}, "profiles:" + hex.EncodeToString(k[:])},
		{SharedConfig{Prefix: "profiles", Namespace: "0123456789abcdef"}, "profiles:0123456789abcdef:" + hex.EncodeToString(k[:])},
	} {
		s := &Shared{cfg: tc.cfg}
		if got := s.key(k); got != tc.want {
			t.Errorf("%+v: key = %s; want %s", tc.cfg, got, tc.want)
		}
	}
}

// TestSharedNamespacesApart: two caches under one Prefix with different
// namespaces (two lookups) never read each other's entries; two with the
// same namespace (one lookup, two jobs) do.
func TestSharedNamespacesApart(t *testing.T) {
	addr := redistest.Addr(t)
	prefix := "test:" + uuid.NewString()
	open := func(ns string) *Shared {
		s, err := NewShared(SharedConfig{Addr: addr, Prefix: prefix, Namespace: ns, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	profiles, sellers, profilesAgain := open(NamespaceOf([]byte("profiles"))), open(NamespaceOf([]byte("sellers"))), open(NamespaceOf([]byte("profiles")))
	ctx := context.Background()
	profiles.Set(ctx, key("7"), []byte("profile 7"))
	if v, _, ok := sellers.Get(ctx, key("7")); ok {
		t.Errorf("another lookup's cache read %q; want a miss", v)
	}
	if v, _, ok := profilesAgain.Get(ctx, key("7")); !ok || string(v) != "profile 7" {
		t.Errorf("the same lookup's cache read %q, %v; want \"profile 7\", a hit", v, ok)
	}
	if st := sellers.Stats(); st.Errors != 0 || strings.Contains(sellers.key(key("7")), profiles.cfg.Namespace) {
		t.Errorf("sellers: stats %+v, key %s; want no errors, a key without the profiles' namespace", st, sellers.key(key("7")))
	}
}

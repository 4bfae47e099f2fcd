package async

import (
	"context"
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// Lookups of the namespace tests: two struct types and two functions with
// the same key and answer types, and two joins.
type (
	nsProfiles struct{ URL string }
	nsSellers  struct{ URL string }
)

func (*nsProfiles) Lookup(context.Context, int) (string, error) { return "", nil }
func (*nsProfiles) LookupBatch(context.Context, []int) ([]string, error) {
	return nil, nil
}
func (*nsSellers) Lookup(context.Context, int) (string, error) { return "", nil }

func nsProfileFn(int) string             { return "" }
func nsSellerFn(int) string              { return "" }
func nsJoin(r int, a string) string      { return a }
func nsJoinOther(r int, a string) string { return a + "!" }

func init() {
	beam.RegisterType(reflect.TypeOf(nsProfiles{}))
	beam.RegisterType(reflect.TypeOf(nsSellers{}))
	register.Function1x1(nsProfileFn)
	register.Function1x1(nsSellerFn)
	register.Function2x1(nsJoin)
	register.Function2x1(nsJoinOther)
}

// TestCacheNamespace: the namespace that follows Cache.Prefix differs
// between lookups that may answer differently (another type, function,
// configuration, method or fallback value) and is the same for the same
// lookup, whatever its join.
func TestCacheNamespace(t *testing.T) {
	intT := reflect.TypeOf(0)
	enrich := func(lookup, join any, form wrapped.LookupForm, fallbacks ...string) *terms.Config {
		t.Helper()
		spec, _, err := wrapped.InspectEnrich(lookup, join, intT, intT, form)
		if err != nil {
			t.Fatal(err)
		}
		return &terms.Config{User: spec, Fallbacks: fallbacks}
	}
	profiles := enrich(&nsProfiles{URL: "http://profiles"}, nsJoin, wrapped.SingleLookup)
	tests := []struct {
		name  string
		other *terms.Config
		same  bool
	}{
		{"the same lookup again", enrich(&nsProfiles{URL: "http://profiles"}, nsJoin, wrapped.SingleLookup), true},
		{"another join", enrich(&nsProfiles{URL: "http://profiles"}, nsJoinOther, wrapped.SingleLookup), true},
		{"another configuration", enrich(&nsProfiles{URL: "http://sellers"}, nsJoin, wrapped.SingleLookup), false},
		{"another type, same configuration", enrich(&nsSellers{URL: "http://profiles"}, nsJoin, wrapped.SingleLookup), false},
		{"another method (LookupBatch)", enrich(&nsProfiles{URL: "http://profiles"}, nsJoin, wrapped.BatchLookup), false},
		{"a function", enrich(nsProfileFn, nsJoin, wrapped.SingleLookup), false},
		{"a fallback value", enrich(&nsProfiles{URL: "http://profiles"}, nsJoin, wrapped.SingleLookup, "model-a"), false},
	}
	for _, tc := range tests {
		got, want := profiles.CacheNamespace(), tc.other.CacheNamespace()
		if (got == want) != tc.same {
			t.Errorf("%s: namespaces %s and %s; want them equal: %v", tc.name, got, want, tc.same)
		}
	}

	fns := []struct {
		name string
		a, b *terms.Config
		same bool
	}{
		{"two functions", enrich(nsProfileFn, nsJoin, wrapped.SingleLookup), enrich(nsSellerFn, nsJoin, wrapped.SingleLookup), false},
		{"one function, two joins", enrich(nsProfileFn, nsJoin, wrapped.SingleLookup), enrich(nsProfileFn, nsJoinOther, wrapped.SingleLookup), true},
		{"first fallbacks differ", enrich(nsProfileFn, nsJoin, wrapped.SingleLookup, "a"), enrich(nsProfileFn, nsJoin, wrapped.SingleLookup, "b"), false},
		// Only the first attempt's answer is cached when the values differ.
		{"later fallbacks differ", enrich(nsProfileFn, nsJoin, wrapped.SingleLookup, "a"), enrich(nsProfileFn, nsJoin, wrapped.SingleLookup, "a", "b"), true},
	}
	for _, tc := range fns {
		if got := tc.a.CacheNamespace() == tc.b.CacheNamespace(); got != tc.same {
			t.Errorf("%s: equal namespaces %v; want %v", tc.name, got, tc.same)
		}
	}
	if ns := profiles.CacheNamespace(); len(ns) != 16 {
		t.Errorf("namespace %q: want 16 hex digits", ns)
	}
}

// TestCacheNamespaceOfParDo: a ParDo's fn is its lookup too: another
// configuration of the same DoFn is another namespace.
func TestCacheNamespaceOfParDo(t *testing.T) {
	spec := func(fn any) *terms.Config {
		t.Helper()
		s, _, err := wrapped.Inspect(fn, reflect.TypeOf(""), reflect.TypeOf(0))
		if err != nil {
			t.Fatal(err)
		}
		return &terms.Config{User: s}
	}
	a, b, c := spec(&gated{Name: "a"}), spec(&gated{Name: "a"}), spec(&gated{Name: "b"})
	if a.CacheNamespace() != b.CacheNamespace() {
		t.Error("one DoFn configuration: two namespaces; want one")
	}
	if a.CacheNamespace() == c.CacheNamespace() {
		t.Error("two DoFn configurations: one namespace; want two")
	}
}

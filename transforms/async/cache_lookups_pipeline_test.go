package async_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/integration/redistest"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// sellerService is another lookup with profileService's key and answer
// types: it answers "seller v<k>" for key k, asking the service at URL.
type sellerService struct{ URL string }

func (l *sellerService) Lookup(ctx context.Context, k int) (string, error) {
	body, err := (&profileService{URL: l.URL, FailKey: -1}).Lookup(ctx, k)
	return "seller " + body, err
}

func init() { beam.RegisterType(reflect.TypeOf(sellerService{})) }

// runLookup runs n records, keyed by their lookup (v % lookups), through
// async.Enrich with lookup and opts, checks that record v is joined with
// answer(v % lookups), and returns the transform's counters.
func runLookup(t *testing.T, lookup any, n int, answer func(k int) string, opts ...async.Option) map[string]int64 {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope("lookups")
	col := beam.ParDo(s, lookupKeyed, inputOf(s, n, false))
	opts = append([]async.Option{async.WithParallelism(8), async.WithCallbackFrequency(200 * time.Millisecond)}, opts...)
	out, failures := async.EnrichWithFailures(s, lookup, col, joinProfile, opts...)
	var want []any
	for v := 0; v < n; v++ {
		want = append(want, fmt.Sprintf("%d:%s", v, answer(v%lookups)))
	}
	passert.Equals(s, out, want...)
	passert.Empty(s, failures)
	res := ptest.RunAndValidate(t, p)
	counters, _ := guardCounters(res, "lookups")
	return counters
}

// TestPipelineSharedCacheKeepsLookupsApart: jobs whose Enrich lookups
// differ (another type, or the same type with another configuration) but
// whose keys and answers have the same types never read each other's
// answers from Redis under one Cache.Prefix; a job with the same lookup
// does, making no call.
func TestPipelineSharedCacheKeepsLookupsApart(t *testing.T) {
	addr := redistest.Addr(t)
	const n = 90
	c := async.WithCache(async.Cache{Size: 100, TTL: time.Minute, Redis: addr, Prefix: "test:" + uuid.NewString()})
	profile := func(k int) string { return fmt.Sprintf("v%d", k) }

	profiles := startRefusingService(t, false)
	runLookup(t, &profileService{URL: profiles.URL, FailKey: -1}, n, profile, c)
	warm := callsMade(profiles)
	if warm < lookups {
		t.Fatalf("profiles: %d calls; want at least %d, one per lookup", warm, lookups)
	}

	sellers := startRefusingService(t, false)
	runLookup(t, &sellerService{URL: sellers.URL}, n, func(k int) string { return "seller " + profile(k) }, c)
	if got := callsMade(sellers); got < lookups {
		t.Errorf("sellers (another lookup type): %d calls; want at least %d, none answered by the profiles' entries", got, lookups)
	}

	mirror := startRefusingService(t, false)
	runLookup(t, &profileService{URL: mirror.URL, FailKey: -1}, n, profile, c)
	if got := callsMade(mirror); got < lookups {
		t.Errorf("profiles at another URL (another configuration): %d calls; want at least %d", got, lookups)
	}

	counters := runLookup(t, &profileService{URL: profiles.URL, FailKey: -1}, n, profile, c)
	if got := callsMade(profiles) - warm; got != 0 {
		t.Errorf("the same profiles lookup in another job: %d calls; want 0, every answer from Redis", got)
	}
	if got := counters[async.MetricSharedCacheErrors]; got != 0 {
		t.Errorf("shared_cache_errors = %d; want 0", got)
	}
}

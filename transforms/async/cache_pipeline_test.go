package async_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/integration/redistest"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// lookups is how many distinct lookups the cache tests' elements stand for:
// element v asks for v % lookups.
const lookups = 30

// lookupOf is the cache key of an element's value.
func lookupOf(v int) string { return strconv.Itoa(v % lookups) }

// profileLookup asks the service for the profile of v % lookups and emits
// the answer: the outputs depend on the lookup only, as WithCache wants.
type profileLookup struct{ URL string }

func (f *profileLookup) ProcessElement(ctx context.Context, _ string, v int, emit func(string)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL+"?v="+lookupOf(v), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := async.CheckResponse(resp); err != nil {
		return err
	}
	emit(string(body))
	emit("again " + string(body)) // two outputs per call: the cache keeps both
	return nil
}

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&profileLookup{})
	register.Function1x1(lookupOf)
}

// profileOutputs are the outputs n elements must have, cached or not.
func profileOutputs(n int) []any {
	var want []any
	for v := 0; v < n; v++ {
		body := fmt.Sprintf("v%d", v%lookups)
		want = append(want, body, "again "+body)
	}
	return want
}

// inputOf is n elements over 7 keys: bounded (input), or from an unbounded
// source in three ticks 100 ms apart.
func inputOf(s beam.Scope, n int, unbounded bool) beam.PCollection {
	if !unbounded {
		return input(s, n, 7)
	}
	const ticks = 3
	interval := 100 * time.Millisecond
	start := time.Now().Truncate(time.Second)
	impulses := periodic.Impulse(s, start, start.Add(ticks*interval), interval, false)
	return beam.ParDo(s, &fanOut{PerTick: n / ticks, Keys: 7, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
}

// runProfiles runs n elements through profileLookup with opts against svc,
// bounded or not, checks the outputs and returns the transform's counters.
func runProfiles(t *testing.T, svc *refusingService, n int, unbounded bool, opts ...async.Option) map[string]int64 {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope("profiles")
	col := inputOf(s, n, unbounded)
	opts = append([]async.Option{async.WithParallelism(8), async.WithCallbackFrequency(200 * time.Millisecond)}, opts...)
	out, failures := async.ParDoWithFailures(s, &profileLookup{URL: svc.URL}, col, opts...)
	passert.Equals(s, out, profileOutputs(n)...)
	passert.Empty(s, failures)
	res := ptest.RunAndValidate(t, p)
	counters, _ := guardCounters(res, "profiles")
	return counters
}

// lookupKeyed keys record v by its lookup, v % lookups.
func lookupKeyed(_ string, v int) (int, int) { return v % lookups, v }

func init() { register.Function2x2[string, int, int, int](lookupKeyed) }

// runEnriched runs n records, keyed by their lookup, through async.Enrich
// with a profileService lookup against svc and opts, bounded or not,
// checks that each record is joined with its own lookup's answer, and
// returns the transform's counters.
func runEnriched(t *testing.T, svc *refusingService, n int, unbounded bool, opts ...async.Option) map[string]int64 {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope("profiles")
	col := beam.ParDo(s, lookupKeyed, inputOf(s, n, unbounded))
	opts = append([]async.Option{async.WithParallelism(8), async.WithCallbackFrequency(200 * time.Millisecond)}, opts...)
	out, failures := async.EnrichWithFailures(s, &profileService{URL: svc.URL, FailKey: -1}, col, joinProfile, opts...)
	var want []any
	for v := 0; v < n; v++ {
		want = append(want, fmt.Sprintf("%d:v%d", v, v%lookups))
	}
	passert.Equals(s, out, want...)
	passert.Empty(s, failures)
	res := ptest.RunAndValidate(t, p)
	counters, _ := guardCounters(res, "profiles")
	return counters
}

// callsMade is how many calls svc answered.
func callsMade(svc *refusingService) int {
	all, _ := svc.starts()
	return len(all)
}

// TestPipelineCacheCallsOncePerLookup: 300 records standing for 30 lookups
// make 300 calls through ParDo without a cache, and 30 through Enrich
// with WithCache (single flight: copies in flight wait for the one call),
// each record joined with its own lookup's answer, on bounded and
// unbounded input.
func TestPipelineCacheCallsOncePerLookup(t *testing.T) {
	for _, unbounded := range []bool{false, true} {
		t.Run(fmt.Sprintf("unbounded=%v", unbounded), func(t *testing.T) {
			const n = 300
			uncached := startRefusingService(t, false)
			runProfiles(t, uncached, n, unbounded)
			if got := callsMade(uncached); got != n {
				t.Errorf("uncached: %d calls; want one per element, %d", got, n)
			}

			svc := startRefusingService(t, false)
			counters := runEnriched(t, svc, n, unbounded, async.WithCache(async.Cache{Size: 100, TTL: time.Minute}))
			calls := callsMade(svc)
			if calls < lookups || calls > lookups*11/10 {
				t.Errorf("cached: %d calls; want one per lookup, %d (at most 10%% more)", calls, lookups)
			}
			hits, misses := counters[async.MetricCacheHits], counters[async.MetricCacheMisses]
			if hits+misses != n || misses != int64(calls) {
				t.Errorf("cache_hits %d + cache_misses %d; want %d records in all, and misses = the %d calls", hits, misses, n, calls)
			}
		})
	}
}

// TestPipelineSharedCacheServesAnotherPipeline: a second pipeline (another
// transform instance, its own worker cache) with the same lookup naming
// the same Redis prefix makes no call at all.
func TestPipelineSharedCacheServesAnotherPipeline(t *testing.T) {
	addr := redistest.Addr(t)
	const n = 90
	c := async.Cache{Size: 100, TTL: time.Minute, Redis: addr, Prefix: "test:" + uuid.NewString()}
	svc := startRefusingService(t, false)
	runEnriched(t, svc, n, false, async.WithCache(c))
	first := callsMade(svc)
	if first < lookups || first > lookups*11/10 {
		t.Errorf("first pipeline: %d calls; want about %d", first, lookups)
	}
	counters := runEnriched(t, svc, n, false, async.WithCache(c))
	if got := callsMade(svc) - first; got != 0 {
		t.Errorf("second pipeline: %d calls; want 0, every lookup in Redis", got)
	}
	if counters[async.MetricSharedCacheErrors] != 0 {
		t.Errorf("shared_cache_errors = %d; want 0", counters[async.MetricSharedCacheErrors])
	}
}

// TestPipelineSharedCacheOutageCalls: a Redis that cannot be reached makes
// the shared cache a miss: every output is still right, and every lookup
// that went to Redis is counted in shared_cache_errors, each a call made
// (cache_misses).
func TestPipelineSharedCacheOutageCalls(t *testing.T) {
	const n = 60
	svc := startRefusingService(t, false)
	counters := runEnriched(t, svc, n, false, async.WithCache(async.Cache{Size: 100, TTL: time.Minute,
		Redis: "127.0.0.1:1", Prefix: "test:" + uuid.NewString()}))
	if got := callsMade(svc); got < lookups || got > n {
		t.Errorf("%d calls; want between %d (the worker's cache) and %d", got, lookups, n)
	}
	if errs, misses := counters[async.MetricSharedCacheErrors], counters[async.MetricCacheMisses]; errs != misses || errs == 0 {
		t.Errorf("shared_cache_errors = %d; want cache_misses, %d: every lookup that went to Redis was unanswered", errs, misses)
	}
}

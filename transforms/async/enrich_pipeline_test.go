package async_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// enrichKeys is how many lookup keys the Enrich tests' records have:
// record v is keyed by v % enrichKeys.
const enrichKeys = 10

// byLookupKey keys record v by its lookup key, v % enrichKeys.
func byLookupKey(_ string, v int) (int, int) { return v % enrichKeys, v }

// profileService looks up key k at the service at URL (a refusingService,
// which counts calls per k and answers "v<k>"). FailKey, if >= 0, is a
// key whose lookup fails without a call.
type profileService struct {
	URL     string
	FailKey int
}

func (l *profileService) Lookup(ctx context.Context, k int) (string, error) {
	if k == l.FailKey {
		return "", fmt.Errorf("no profile for %d", k)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.URL+"?v="+strconv.Itoa(k), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := async.CheckResponse(resp); err != nil {
		return "", err
	}
	return string(body), nil
}

// joinProfile merges a record and its key's profile.
func joinProfile(v int, profile string) string { return fmt.Sprintf("%d:%s", v, profile) }

// joinStrict is joinProfile, but fails for records divisible by 7 and
// panics for the others divisible by 11.
func joinStrict(v int, profile string) (string, error) {
	switch {
	case v%7 == 0:
		return "", errors.New("record refused")
	case v%11 == 0:
		panic("join bug")
	}
	return joinProfile(v, profile), nil
}

// enrichFailure prints a failure record's decoded key and value, its kind
// and attempts.
func enrichFailure(f async.Failure) string {
	k, v, err := async.DecodeFailure[int, int](f)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d/%d/%s/%d", k, v, f.Kind, f.Attempts)
}

func init() {
	register.Function2x2[string, int, int, int](byLookupKey)
	register.Function2x1[int, string, string](joinProfile)
	register.Function2x2[int, string, string, error](joinStrict)
	register.Function1x1(enrichFailure)
	beam.RegisterType(reflect.TypeOf((*profileService)(nil)).Elem())
}

// enrichInput is n records keyed by their lookup key, bounded or from an
// unbounded source.
func enrichInput(s beam.Scope, n int, unbounded bool) beam.PCollection {
	return beam.ParDo(s, byLookupKey, inputOf(s, n, unbounded))
}

// TestPipelineEnrich: 150 records over 10 lookup keys, bounded and
// unbounded, each come out once joined with its own key's answer; the
// lookups of key 3 fail and give one failure record per record of key 3
// (key and record decodable). The cache and single flight make one call
// per key: copies of a key in flight wait for its one call, later ones hit
// the cache. The bound allows each key a second call, for a lead whose
// attempt was sent back before its answer (the followers then lead again).
func TestPipelineEnrich(t *testing.T) {
	for _, unbounded := range []bool{false, true} {
		t.Run(fmt.Sprintf("unbounded=%v", unbounded), func(t *testing.T) {
			const n, failKey = 150, 3
			svc := startRefusingService(t, false)
			p, s := beam.NewPipelineWithRoot()
			s = s.Scope("enrich")
			out, failures := async.EnrichWithFailures(s, &profileService{URL: svc.URL, FailKey: failKey}, enrichInput(s, n, unbounded), joinProfile,
				async.WithParallelism(8), async.WithCallbackFrequency(200*time.Millisecond))
			var want, wantFail []any
			for v := 0; v < n; v++ {
				if v%enrichKeys == failKey {
					wantFail = append(wantFail, fmt.Sprintf("%d/%d/error/1", failKey, v))
					continue
				}
				want = append(want, fmt.Sprintf("%d:v%d", v, v%enrichKeys))
			}
			passert.Equals(s, out, want...)
			passert.Equals(s, beam.ParDo(s, enrichFailure, failures), wantFail...)
			res := ptest.RunAndValidate(t, p)
			_, byKey := svc.starts()
			if _, called := byKey[failKey]; called || len(byKey) != enrichKeys-1 {
				t.Errorf("keys looked up at the service: %d, key %d among them: %v; want %d, not key %d", len(byKey), failKey, called, enrichKeys-1, failKey)
			}
			for k, calls := range byKey {
				if len(calls) > 2 {
					t.Errorf("key %d looked up %d times; want once (twice at most)", k, len(calls))
				}
			}
			counters, _ := guardCounters(res, "enrich")
			// Misses: a call per key, and one per record of the failing key
			// (a failure is not cached: each of its records leads in turn).
			hits, misses := counters[async.MetricCacheHits], counters[async.MetricCacheMisses]
			if hits+misses != n || misses > 2*enrichKeys+n/enrichKeys {
				t.Errorf("cache_hits %d, cache_misses %d; want %d in all, at most %d misses", hits, misses, n, 2*enrichKeys+n/enrichKeys)
			}
		})
	}
}

// TestPipelineEnrichJoinFailuresArePermanent: a join that returns an error
// or panics fails its record for good at its first attempt, though retries
// are allowed; the other records of the same keys are served.
func TestPipelineEnrichJoinFailuresArePermanent(t *testing.T) {
	const n = 120
	svc := startRefusingService(t, false)
	p, s := beam.NewPipelineWithRoot()
	out, failures := async.EnrichWithFailures(s, &profileService{URL: svc.URL, FailKey: -1}, enrichInput(s, n, false), joinStrict,
		async.WithParallelism(8), async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(time.Millisecond)))
	var want, wantFail []any
	for v := 0; v < n; v++ {
		if v%7 == 0 || v%11 == 0 {
			wantFail = append(wantFail, fmt.Sprintf("%d/%d/permanent/1", v%enrichKeys, v))
			continue
		}
		want = append(want, joinProfile(v, fmt.Sprintf("v%d", v%enrichKeys)))
	}
	passert.Equals(s, out, want...)
	passert.Equals(s, beam.ParDo(s, enrichFailure, failures), wantFail...)
	ptest.RunAndValidate(t, p)
	if all, _ := svc.starts(); len(all) > 2*enrichKeys {
		t.Errorf("%d lookups; want about %d, one per key (join failures are not retried)", len(all), enrichKeys)
	}
}

// lookupFunc is a lookup as a top-level function.
func lookupFunc(k int) string { return "f" + strconv.Itoa(k) }

// lookupTwo has the wrong shape: it takes the record too.
func lookupTwo(k, v int) string { return "" }

// joinWrongRecord takes a string record, but the records are ints.
func joinWrongRecord(r string, a string) string { return r + a }

// joinWrongAnswer takes an int answer, but the lookups answer strings.
func joinWrongAnswer(r int, a int) string { return "" }

// joinNoOutput returns nothing.
func joinNoOutput(r int, a string) {}

// recordTag is a registered func(int) string, for the KeyFn rows.
func recordTag(v int) string { return strconv.Itoa(v) }

func init() {
	register.Function1x1(lookupFunc)
	register.Function2x1(lookupTwo)
	register.Function2x1(joinWrongRecord)
	register.Function2x1(joinWrongAnswer)
	register.Function2x0(joinNoOutput)
	register.Function1x1(recordTag)
}

// TestPipelineEnrichWithLookupFunc: a top-level lookup function, with the
// default cache.
func TestPipelineEnrichWithLookupFunc(t *testing.T) {
	const n = 40
	p, s := beam.NewPipelineWithRoot()
	out := async.Enrich(s, lookupFunc, enrichInput(s, n, false), joinProfile)
	var want []any
	for v := 0; v < n; v++ {
		want = append(want, fmt.Sprintf("%d:f%d", v, v%enrichKeys))
	}
	passert.Equals(s, out, want...)
	ptest.RunAndValidate(t, p)
}

// TestEnrichErrorsSayWhatToChange: construction refuses what cannot work.
func TestEnrichErrorsSayWhatToChange(t *testing.T) {
	keyFn := async.WithCache(async.Cache{Size: 10, TTL: time.Minute, KeyFn: recordTag})
	tests := []struct {
		name       string
		lookup     any
		join       any
		notKV      bool
		opts       []async.Option
		wantPrefix string
		want       string
	}{
		{"nil lookup", nil, joinProfile, false, nil, "async.Enrich", "lookup is nil"},
		{"lookup of two params", lookupTwo, joinProfile, false, nil, "async.Enrich", "want the key only"},
		{"lookup struct by value", profileService{}, joinProfile, false, nil, "async.Enrich", "lookup is a async_test.profileService"},
		{"lookup struct without Lookup", &slowLabel{}, joinProfile, false, nil, "async.Enrich", "has no Lookup method"},
		{"lookup closure", func(k int) string { return "" }, joinProfile, false, nil, "async.Enrich", "closure"},
		{"nil join", lookupFunc, nil, false, nil, "async.Enrich", "join is nil"},
		{"join of the wrong record", lookupFunc, joinWrongRecord, false, nil, "async.Enrich", "its first parameter is string but the records (the input's values) are int"},
		{"join of the wrong answer", lookupFunc, joinWrongAnswer, false, nil, "async.Enrich", "its second parameter is int but the lookup answers string"},
		{"join without output", lookupFunc, joinNoOutput, false, nil, "async.Enrich", "it returns 0 values"},
		{"input not KV", lookupFunc, joinProfile, true, nil, "async.Enrich", "the input must be a PCollection<KV<K, V>>"},
		{"KeyFn on Enrich", lookupFunc, joinProfile, false, []async.Option{keyFn}, "async.Enrich", "Enrich caches by the lookup key, the input's key; drop KeyFn"},
		{"batch option on Enrich", lookupFunc, joinProfile, false, []async.Option{async.WithBatchSize(10)}, "async.Enrich", "batch options apply to async.BatchParDo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			col := enrichInput(s, 3, false)
			if tt.notKV {
				col = beam.Create(s, 1, 2)
			}
			_, err := async.TryEnrich(s, tt.lookup, col, tt.join, tt.opts...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantPrefix) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("TryEnrich: %v; want an error starting %q containing %q", err, tt.wantPrefix, tt.want)
			}
		})
	}
	t.Run("KeyFn on ParDo", func(t *testing.T) {
		_, s := beam.NewPipelineWithRoot()
		_, err := async.TryParDo(s, &slowLabel{}, input(s, 3, 1), keyFn)
		if err == nil || !strings.Contains(err.Error(), "use async.Enrich (records keyed by the lookup key)") {
			t.Errorf("TryParDo: %v; want KeyFn refused, naming async.Enrich", err)
		}
	})
	t.Run("KeyFn on BatchParDo", func(t *testing.T) {
		_, s := beam.NewPipelineWithRoot()
		_, err := async.TryBatchParDo(s, &bulkProfile{}, input(s, 3, 1), keyFn)
		if err == nil || !strings.Contains(err.Error(), "use async.Enrich (records keyed by the lookup key)") {
			t.Errorf("TryBatchParDo: %v; want KeyFn refused, naming async.Enrich", err)
		}
	})
}

// TestPipelineEnrichFixedWindows: records in fixed windows are joined with
// their key's answer (cached across windows: the cache key is the lookup
// key) and each output is in its record's window.
func TestPipelineEnrichFixedWindows(t *testing.T) {
	const n, minutes = 200, 4
	svc := startRefusingService(t, false)
	p, s := beam.NewPipelineWithRoot()
	ints := make([]int, n)
	for i := range ints {
		ints[i] = i
	}
	stamped := beam.ParDo(s, &stampMinute{Minutes: minutes}, beam.CreateList(s, ints))
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), stamped)
	records := beam.ParDo(s, byLookupKey, beam.ParDo(s, &keyBy{Keys: 3}, windowed))
	out := async.Enrich(s, &profileService{URL: svc.URL, FailKey: -1}, records, joinProfile, async.WithParallelism(8))
	var want []any
	for v := 0; v < n; v++ {
		want = append(want, joinProfile(v, fmt.Sprintf("v%d", v%enrichKeys)))
	}
	global := window.NewGlobalWindows()
	passert.EqualsList(s, beam.WindowInto(s, global, out), want)
	perWindow := beam.ParDo(s, countOf, stats.Count(s, beam.ParDo(s, one, out)))
	passert.Equals(s, beam.WindowInto(s, global, perWindow), n/minutes, n/minutes, n/minutes, n/minutes)
	ptest.RunAndValidate(t, p)
	if all, _ := svc.starts(); len(all) > 2*enrichKeys {
		t.Errorf("%d lookups; want about %d, one per key", len(all), enrichKeys)
	}
}

package async_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// refusingService is a real HTTP service on loopback that answers the first
// call for each value with 503 and Retry-After (when RefuseFirst), and
// records when each value's calls came.
type refusingService struct {
	*httptest.Server
	refuseFirst bool
	mu          sync.Mutex
	calls       map[int][]time.Time
}

func startRefusingService(t *testing.T, refuseFirst bool) *refusingService {
	s := &refusingService{refuseFirst: refuseFirst, calls: map[int][]time.Time{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := strconv.Atoi(r.URL.Query().Get("v"))
		if err != nil {
			http.Error(w, "bad v", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.calls[v] = append(s.calls[v], time.Now())
		first := len(s.calls[v]) == 1
		s.mu.Unlock()
		if s.refuseFirst && first {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		time.Sleep(5 * time.Millisecond)
		fmt.Fprintf(w, "v%d", v)
	}))
	t.Cleanup(s.Close)
	return s
}

// starts returns every call's time, sorted by value then attempt.
func (s *refusingService) starts() (all []time.Time, byValue map[int][]time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byValue = map[int][]time.Time{}
	for v, ts := range s.calls {
		byValue[v] = append([]time.Time(nil), ts...)
		all = append(all, ts...)
	}
	return all, byValue
}

// httpLabel calls the service at URL for each value and emits its answer.
type httpLabel struct{ URL string }

func (f *httpLabel) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL+"?v="+strconv.Itoa(v), nil)
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
	emit(key + ":" + string(body))
	return nil
}

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&httpLabel{})
}

// guardCounters returns the transform's counters under scope name.
func guardCounters(res beam.PipelineResult, scope string) (counters map[string]int64, limit int64) {
	counters = map[string]int64{}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if strings.Contains(c.Namespace(), scope) {
			counters[c.Name()] += c.Result()
		}
	}
	for _, g := range res.Metrics().AllMetrics().Gauges() {
		if strings.Contains(g.Namespace(), scope) && g.Name() == async.MetricConcurrencyLimit {
			limit = g.Result().Value
		}
	}
	return counters, limit
}

// TestPipelineOverloadIsRetriedAfterItsWait: a service that refuses each
// value's first call with 503 and Retry-After: 1 gets every value a second
// time, no sooner than a second later, on bounded and unbounded input; the
// overload answers are counted.
func TestPipelineOverloadIsRetriedAfterItsWait(t *testing.T) {
	for _, unbounded := range []bool{false, true} {
		t.Run(fmt.Sprintf("unbounded=%v", unbounded), func(t *testing.T) {
			const n, keys = 30, 5
			svc := startRefusingService(t, true)
			p, s := beam.NewPipelineWithRoot()
			s = s.Scope("overload")
			var col beam.PCollection
			if unbounded {
				const ticks = 3
				interval := 100 * time.Millisecond
				start := time.Now().Truncate(time.Second)
				impulses := periodic.Impulse(s, start, start.Add(ticks*interval), interval, false)
				col = beam.ParDo(s, &fanOut{PerTick: n / ticks, Keys: keys, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
			} else {
				col = input(s, n, keys)
			}
			out, failures := async.ParDoWithFailures(s, &httpLabel{URL: svc.URL}, col, async.WithParallelism(8),
				async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(10*time.Millisecond)),
				async.WithCallbackFrequency(200*time.Millisecond))
			passert.Count(s, out, "outputs", n)
			passert.Empty(s, failures)
			res := ptest.RunAndValidate(t, p)

			_, byValue := svc.starts()
			if len(byValue) != n {
				t.Fatalf("the service saw %d values; want %d", len(byValue), n)
			}
			for v, ts := range byValue {
				if len(ts) != 2 {
					t.Errorf("value %d was called %d times; want 2 (refused once, then served)", v, len(ts))
					continue
				}
				if gap := ts[1].Sub(ts[0]); gap < time.Second {
					t.Errorf("value %d was called again after %v; want at least the Retry-After of 1s", v, gap)
				}
			}
			got, _ := guardCounters(res, "overload")
			if got[async.MetricOverloaded] != n || got[async.MetricCalls] != 2*n {
				t.Errorf("counters overloaded=%d calls=%d; want %d and %d", got[async.MetricOverloaded], got[async.MetricCalls], n, 2*n)
			}
		})
	}
}

// TestPipelineRateLimit: calls start no faster than the rate. The check is
// an upper bound on the calls in any one second, which a slow machine can
// only lower.
func TestPipelineRateLimit(t *testing.T) {
	const n, keys, rate = 60, 6, 40
	svc := startRefusingService(t, false)
	p, s := beam.NewPipelineWithRoot()
	out := async.ParDo(s, &httpLabel{URL: svc.URL}, input(s, n, keys), async.WithParallelism(16), async.WithRateLimit(rate, 1))
	passert.Count(s, out, "outputs", n)
	ptest.RunAndValidate(t, p)
	all, _ := svc.starts()
	if len(all) != n {
		t.Fatalf("the service saw %d calls; want %d", len(all), n)
	}
	for _, from := range all {
		in := 0
		for _, at := range all {
			if !at.Before(from) && at.Sub(from) < time.Second {
				in++
			}
		}
		if in > rate+1 {
			t.Fatalf("%d calls started within a second of %v; want at most %d (rate %d, burst 1)", in, from.Format(time.StampMicro), rate+1, rate)
		}
	}
}

// TestPipelineAdaptiveParallelism: the adaptive limit stays within its bounds,
// its changes reach the listener, and every element is served.
func TestPipelineAdaptiveParallelism(t *testing.T) {
	const n, keys = 300, 10
	svc := startRefusingService(t, false)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope("adaptive")
	out := async.ParDo(s, &httpLabel{URL: svc.URL}, input(s, n, keys), async.WithAdaptiveParallelism(2, 12),
		async.WithListener(&async.JSONLinesListener{Path: path}))
	passert.Count(s, out, "outputs", n)
	res := ptest.RunAndValidate(t, p)
	got, limit := guardCounters(res, "adaptive")
	if got[async.MetricCalls] != n {
		t.Errorf("calls = %d; want %d", got[async.MetricCalls], n)
	}
	if limit < 2 || limit > 12 {
		t.Errorf("concurrency_limit gauge = %d; want within [2, 12]", limit)
	}
	events, err := async.ReadEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	for _, e := range events {
		if e.Type == async.EventLimitChanged {
			changes++
			if e.Limit < 2 || e.Limit > 12 {
				t.Errorf("limit event %+v: limit outside [2, 12]", e)
			}
		}
	}
	if changes == 0 {
		t.Error("no limit_changed event; want the limit's growth from 2 reported")
	}
}

package async_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// batchLabel is slowLabel's batch form: one sleep per request, the same
// outputs per element.
type batchLabel struct{ SleepMs int }

func (f *batchLabel) ProcessBatch(ctx context.Context, keys []string, values []int, emit func(int, string)) error {
	select {
	case <-time.After(time.Duration(f.SleepMs) * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	for i := range keys {
		emit(i, fmt.Sprintf("%s:%d", keys[i], values[i]))
	}
	return nil
}

// batchService is a loopback bulk endpoint: POST a JSON list of values, get
// a JSON list of answers, one per value ("" and an error text for a value
// it rejects: every tenth). Its first request fails whole with a 500.
type batchService struct {
	*httptest.Server
	mu    sync.Mutex
	sizes []int
	seen  map[int]int // value -> requests that carried it
	reqs  [][]int
	// repeats counts requests that carried a value more than once.
	repeats int
}

func startBatchService(t *testing.T) *batchService {
	s := &batchService{seen: map[int]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var values []int
		if err := json.NewDecoder(r.Body).Decode(&values); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.sizes = append(s.sizes, len(values))
		s.reqs = append(s.reqs, values)
		first := len(s.sizes) == 1
		inRequest := map[int]bool{}
		for _, v := range values {
			s.seen[v]++
			inRequest[v] = true
		}
		if len(inRequest) < len(values) {
			s.repeats++
		}
		s.mu.Unlock()
		if first {
			http.Error(w, "warming up", http.StatusInternalServerError)
			return
		}
		type answer struct{ Label, Error string }
		out := make([]answer, len(values))
		for i, v := range values {
			if v%10 == 0 {
				out[i].Error = fmt.Sprintf("value %d rejected", v)
				continue
			}
			out[i].Label = fmt.Sprintf("v%d", v)
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s
}

// bulkLookup calls batchService: a request error fails the request, a
// rejected value fails its element for good.
type bulkLookup struct{ URL string }

func (f *bulkLookup) ProcessBatch(ctx context.Context, keys []string, values []int, emit func(int, string)) ([]error, error) {
	body, _ := json.Marshal(values)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bulk lookup: %s", resp.Status)
	}
	var answers []struct{ Label, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&answers); err != nil {
		return nil, err
	}
	errs := make([]error, len(values))
	for i, a := range answers {
		if a.Error != "" {
			errs[i] = async.Permanent(errors.New(a.Error))
			continue
		}
		emit(i, keys[i]+":"+a.Label)
	}
	return errs, nil
}

// describeRejection prints a failure record's key, value and kind, and
// checks its attempts: 1, or 2 when its first request failed whole.
func describeRejection(f async.Failure) string {
	if f.Attempts != 1 && f.Attempts != 2 {
		return fmt.Sprintf("%s/%s: %d attempts", f.KeyText, f.ValueText, f.Attempts)
	}
	return fmt.Sprintf("%s/%s/%s", f.KeyText, f.ValueText, f.Kind)
}

func init() {
	register.Function1x1(describeRejection)
	// A batch fn is no Beam DoFn: it is registered as a type.
	beam.RegisterType(reflect.TypeOf((*batchLabel)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*bulkLookup)(nil)).Elem())
}

// TestPipelineBatchesLikeParDo: BatchParDo's outputs, with their timestamps
// and windows, are a plain ParDo's over the same elements, in the global,
// fixed and sliding windows, with batches across keys and per key.
func TestPipelineBatchesLikeParDo(t *testing.T) {
	for _, w := range windowings {
		for _, perKey := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/perKey=%v", w.name, perKey), func(t *testing.T) {
				p, s := beam.NewPipelineWithRoot()
				ints := make([]int, 60)
				for i := range ints {
					ints[i] = i
				}
				stamped := beam.ParDo(s, secondsApart{}, beam.CreateList(s, ints))
				keyed := beam.ParDo(s, &keyBy{Keys: 3}, beam.WindowInto(s, w.fn, stamped))
				opts := []async.Option{async.WithParallelism(2), async.WithBatchSize(8), async.WithBatchWait(5 * time.Millisecond)}
				if perKey {
					opts = append(opts, async.WithBatchPerKey())
				}
				got := beam.ParDo(s, stamp{}, async.BatchParDo(s, &batchLabel{SleepMs: 2}, keyed, opts...))
				want := beam.ParDo(s, stamp{}, beam.ParDo(s, &slowLabel{}, keyed))
				global := window.NewGlobalWindows()
				passert.Equals(s, beam.WindowInto(s, global, got), beam.WindowInto(s, global, want))
				ptest.RunAndValidate(t, p)
			})
		}
	}
}

// TestPipelineBatchFailuresAndRetries: against a loopback bulk endpoint,
// bounded and unbounded: a request that fails whole is retried for all its
// elements, a rejected element is a failure record after one attempt, every
// other element is output once; requests carry many elements, and the
// metrics count them as the service does.
func TestPipelineBatchFailuresAndRetries(t *testing.T) {
	for _, unbounded := range []bool{false, true} {
		t.Run(fmt.Sprintf("unbounded=%v", unbounded), func(t *testing.T) {
			const n = 300
			svc := startBatchService(t)
			p, s := beam.NewPipelineWithRoot()
			s = s.Scope("bulk")
			col := inputOf(s, n, unbounded)
			out, failures := async.BatchParDoWithFailures(s, &bulkLookup{URL: svc.URL}, col, async.WithParallelism(2),
				async.WithBatchSize(25), async.WithBatchWait(20*time.Millisecond), async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(10*time.Millisecond)),
				async.WithCallbackFrequency(200*time.Millisecond))
			var wantOut, wantFail []any
			for i := 0; i < n; i++ {
				k, v := keyed(i, 7)
				if v%10 == 0 {
					wantFail = append(wantFail, fmt.Sprintf("%s/%d/permanent", k, v))
					continue
				}
				wantOut = append(wantOut, fmt.Sprintf("%s:v%d", k, v))
			}
			passert.Equals(s, out, wantOut...)
			passert.Equals(s, beam.ParDo(s, describeRejection, failures), wantFail...)
			res := ptest.RunAndValidate(t, p)

			svc.mu.Lock()
			sizes, seen := append([]int(nil), svc.sizes...), svc.seen
			svc.mu.Unlock()
			items := 0
			for _, k := range sizes {
				items += k
				if k > 25 {
					t.Errorf("a request of %d elements; want at most the batch size 25", k)
				}
			}
			if len(sizes) > n/5 {
				t.Errorf("%d requests for %d elements; want them batched (at most %d)", len(sizes), n, n/5)
			}
			for v := 0; v < n; v++ {
				if seen[v] < 1 || seen[v] > 2 {
					t.Errorf("value %d sent %d times; want 1 (2 if its first request failed whole)", v, seen[v])
				}
			}
			counters, _ := guardCounters(res, "bulk")
			if counters[async.MetricRequests] != int64(len(sizes)) || counters[async.MetricRequestItems] != int64(items) {
				t.Errorf("metrics: %d requests of %d elements; the service saw %d of %d", counters[async.MetricRequests], counters[async.MetricRequestItems], len(sizes), items)
			}
		})
	}
}

// bulkProfile asks batchService for the profile of each value's lookup
// (an odd number, which it never rejects) and emits the answer: outputs
// that depend on the value only, as a cache keyed by the whole element
// wants.
type bulkProfile struct{ URL string }

func (f *bulkProfile) ProcessBatch(ctx context.Context, keys []string, values []int, emit func(int, string)) error {
	asked := make([]int, len(values))
	for i, v := range values {
		asked[i] = 2*(v%lookups) + 1
	}
	labels := &bulkLookup{URL: f.URL}
	errs, err := labels.ProcessBatch(ctx, keys, asked, func(i int, out string) { emit(i, out[strings.Index(out, ":")+1:]) })
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

func init() { beam.RegisterType(reflect.TypeOf((*bulkProfile)(nil)).Elem()) }

// lookupElement makes record v the element (its lookup, v % lookups) keyed
// by the lookup's name: 30 distinct elements, each 10 times.
func lookupElement(_ string, v int) (string, int) { return lookupOf(v), v % lookups }

func init() { register.Function2x2[string, int, string, int](lookupElement) }

// TestPipelineBatchWithCache: BatchParDo with WithCache (keyed by the whole
// element) over 300 elements that are 30 distinct ones sends each about
// once (twice when its first request failed whole), and every element has
// its output.
func TestPipelineBatchWithCache(t *testing.T) {
	const n = 300
	svc := startBatchService(t)
	p, s := beam.NewPipelineWithRoot()
	out, failures := async.BatchParDoWithFailures(s, &bulkProfile{URL: svc.URL}, beam.ParDo(s, lookupElement, input(s, n, 7)), async.WithParallelism(2),
		async.WithBatchSize(10), async.WithBatchWait(5*time.Millisecond), async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(10*time.Millisecond)),
		async.WithCache(async.Cache{Size: 100, TTL: time.Minute}))
	var want []any
	for v := 0; v < n; v++ {
		want = append(want, fmt.Sprintf("v%d", 2*(v%lookups)+1))
	}
	passert.Equals(s, out, want...)
	passert.Empty(s, failures)
	ptest.RunAndValidate(t, p)
	svc.mu.Lock()
	defer svc.mu.Unlock()
	inFirst := map[int]bool{}
	for _, v := range svc.reqs[0] {
		inFirst[v] = true
	}
	for v, sent := range svc.seen {
		if want := map[bool]int{false: 1, true: 2}[inFirst[v]]; sent > want {
			t.Errorf("lookup %d sent %d times; want at most %d (in the first request, which fails whole: %v); requests %v", v, sent, want, inFirst[v], svc.reqs)
		}
	}
	if len(svc.seen) != lookups {
		t.Errorf("%d lookups sent; want %d", len(svc.seen), lookups)
	}
}

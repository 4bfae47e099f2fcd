package async_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// bulkAnswers is a batch lookup against batchService: key k's answer is
// "v<k>"; the service rejects key 0 (a Permanent error for that key) and
// fails its first request whole.
type bulkAnswers struct{ URL string }

func (l *bulkAnswers) LookupBatch(ctx context.Context, keys []int) ([]string, []error, error) {
	answers := make([]string, len(keys))
	errs, err := (&bulkLookup{URL: l.URL}).ProcessBatch(ctx, make([]string, len(keys)), keys, func(i int, out string) {
		answers[i] = strings.TrimPrefix(out, ":")
	})
	return answers, errs, err
}

// shortAnswers is a batch lookup that answers one key too few.
func shortAnswers(keys []int) ([]string, error) { return make([]string, len(keys)-1), nil }

// noAnswers fails every key, answering nothing.
type noAnswers struct{}

func (noAnswers) LookupBatch(keys []int) ([]string, []error, error) {
	errs := make([]error, len(keys))
	for i, k := range keys {
		errs[i] = async.Permanent(fmt.Errorf("no answer for %d", k))
	}
	return nil, errs, nil
}

// lookupWithErrs is a batch lookup function with per-key errors (a []error
// result, which Beam's own function encoding refuses): it fails every key.
func lookupWithErrs(keys []int) ([]string, []error, error) {
	return noAnswers{}.LookupBatch(keys)
}

// lookupBatchTwo takes a parameter too many.
func lookupBatchTwo(keys []int, extra string) []string { return nil }

// rejectedRecord prints a failure record's key, record and kind.
func rejectedRecord(f async.Failure) string {
	k, v, err := async.DecodeFailure[int, int](f)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d/%d/%s", k, v, f.Kind)
}

// failureCause prints a failure record's error.
func failureCause(f async.Failure) string { return f.Error }

func init() {
	beam.RegisterType(reflect.TypeOf((*bulkAnswers)(nil)).Elem())
	register.Function1x2[[]int, []string, error](shortAnswers)
	register.Function1x3[[]int, []string, []error, error](lookupWithErrs)
	beam.RegisterType(reflect.TypeOf((*noAnswers)(nil)).Elem())
	register.Function2x1[[]int, string, []string](lookupBatchTwo)
	register.Function1x1(rejectedRecord)
	register.Function1x1(failureCause)
}

// TestPipelineBatchEnrich: 150 records over 10 lookup keys, bounded and
// unbounded, looked up in requests of up to 4 keys: each record comes out
// once joined with its key's answer, and the records of key 0, which the
// service rejects, are failure records. With the cache (the default) no
// request carries a key twice and a key is sent once, or twice when it
// was in the first request, which the service fails whole; with
// WithoutCache every record is its own lookup:
// the service sees each record's key once, plus the first request again.
func TestPipelineBatchEnrich(t *testing.T) {
	for _, cached := range []bool{true, false} {
		for _, unbounded := range []bool{false, true} {
			t.Run(fmt.Sprintf("cached=%v/unbounded=%v", cached, unbounded), func(t *testing.T) {
				const n, size = 150, 4
				svc := startBatchService(t)
				p, s := beam.NewPipelineWithRoot()
				s = s.Scope("batchenrich")
				opts := []async.Option{async.WithParallelism(2), async.WithBatchSize(size), async.WithBatchWait(5 * time.Millisecond),
					async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(10 * time.Millisecond)), async.WithCallbackFrequency(200 * time.Millisecond)}
				if !cached {
					opts = append(opts, async.WithoutCache())
				}
				out, failures := async.BatchEnrichWithFailures(s, &bulkAnswers{URL: svc.URL}, enrichInput(s, n, unbounded), joinProfile, opts...)
				var want, wantFail []any
				for v := 0; v < n; v++ {
					if v%enrichKeys == 0 {
						wantFail = append(wantFail, fmt.Sprintf("0/%d/%s", v, async.KindPermanent))
						continue
					}
					want = append(want, joinProfile(v, fmt.Sprintf("v%d", v%enrichKeys)))
				}
				passert.Equals(s, out, want...)
				passert.Equals(s, beam.ParDo(s, rejectedRecord, failures), wantFail...)
				res := ptest.RunAndValidate(t, p)

				svc.mu.Lock()
				defer svc.mu.Unlock()
				sent := 0
				for _, size := range svc.sizes {
					sent += size
				}
				for _, got := range svc.sizes {
					if got > size {
						t.Errorf("a request of %d keys; want at most %d", got, size)
					}
				}
				if cached {
					if svc.repeats > 0 {
						t.Errorf("%d requests carried a key twice; want none (single flight)", svc.repeats)
					}
					inFirst := map[int]bool{}
					for _, k := range svc.reqs[0] {
						inFirst[k] = true
					}
					for k, times := range svc.seen {
						if want := map[bool]int{false: 1, true: 2}[inFirst[k]]; k != 0 && times > want {
							t.Errorf("key %d sent %d times; want at most %d (in the first request, which fails whole: %v)", k, times, want, inFirst[k])
						}
					}
				} else if first := svc.sizes[0]; sent != n+first {
					t.Errorf("%d keys sent in %d requests, the first (failed whole) of %d; want %d, one per record and the first request's again", sent, len(svc.sizes), first, n+first)
				}
				counters, _ := guardCounters(res, "batchenrich")
				if got := counters[async.MetricRequests]; got != int64(len(svc.sizes)) {
					t.Errorf("metric %s = %d; the service saw %d", async.MetricRequests, got, len(svc.sizes))
				}
			})
		}
	}
}

// TestPipelineEnrichWithoutCache: under WithoutCache every record is its
// own lookup, even of a key seen before.
func TestPipelineEnrichWithoutCache(t *testing.T) {
	const n, failKey = 60, 3
	svc := startRefusingService(t, false)
	p, s := beam.NewPipelineWithRoot()
	out, failures := async.EnrichWithFailures(s, &profileService{URL: svc.URL, FailKey: failKey}, enrichInput(s, n, false), joinProfile,
		async.WithoutCache(), async.WithParallelism(4))
	passert.Count(s, out, "outputs", n-n/enrichKeys)
	passert.Count(s, failures, "failures", n/enrichKeys)
	ptest.RunAndValidate(t, p)
	all, _ := svc.starts()
	if len(all) != n-n/enrichKeys {
		t.Errorf("%d lookups at the service; want %d, one per record but for key %d's", len(all), n-n/enrichKeys, failKey)
	}
}

// TestPipelineBatchEnrichShortAnswer: a batch lookup that answers fewer
// keys than it was given (requests of one key: none) fails its request, and so each record, with a
// cause that says so.
func TestPipelineBatchEnrichShortAnswer(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	out, failures := async.BatchEnrichWithFailures(s, shortAnswers, enrichInput(s, 3, false), joinProfile, async.WithoutCache(), async.WithBatchSize(1))
	passert.Empty(s, out)
	passert.Equals(s, beam.ParDo(s, failureCause, failures),
		"github.com/asyncbeam/asyncbeam/transforms/async_test.shortAnswers returned 0 answers; want 1, one per key, in the keys' order",
		"github.com/asyncbeam/asyncbeam/transforms/async_test.shortAnswers returned 0 answers; want 1, one per key, in the keys' order",
		"github.com/asyncbeam/asyncbeam/transforms/async_test.shortAnswers returned 0 answers; want 1, one per key, in the keys' order")
	ptest.RunAndValidate(t, p)
}

// TestPipelineBatchEnrichEveryKeyFailed: a batch lookup that fails every
// key of a request may answer no list at all: each record fails with its
// key's error.
// The function form ships too, though it returns []error.
func TestPipelineBatchEnrichEveryKeyFailed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		lookup any
	}{{"struct", &noAnswers{}}, {"function", lookupWithErrs}} {
		t.Run(tt.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			out, failures := async.BatchEnrichWithFailures(s, tt.lookup, enrichInput(s, 3, false), joinProfile)
			passert.Empty(s, out)
			passert.Equals(s, beam.ParDo(s, failureCause, failures), "no answer for 0", "no answer for 1", "no answer for 2")
			ptest.RunAndValidate(t, p)
		})
	}
}

// TestBatchEnrichErrorsSayWhatToChange: construction refuses what cannot
// work.
func TestBatchEnrichErrorsSayWhatToChange(t *testing.T) {
	cache := async.WithCache(async.Cache{Size: 10, TTL: time.Minute})
	tests := []struct {
		name   string
		lookup any
		opts   []async.Option
		batch  bool
		want   string
	}{
		{"per-key lookup", lookupFunc, nil, true, "the keys parameter is int but the input's keys are int"},
		{"lookup struct without LookupBatch", &profileService{}, nil, true, "has no LookupBatch method"},
		{"lookup of two params", lookupBatchTwo, nil, true, "it takes 2 parameters after the context; want the keys only"},
		{"batch lookup under Enrich", shortAnswers, nil, false, "the key parameter is []int but the input's keys are int"},
		{"WithBatchPerKey", &bulkAnswers{}, []async.Option{async.WithBatchPerKey()}, true, "WithBatchPerKey: a BatchEnrich request is a list of lookup keys"},
		{"WithCache and WithoutCache", &bulkAnswers{}, []async.Option{cache, async.WithoutCache()}, true, "WithCache and WithoutCache: give one of them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			col := enrichInput(s, 3, false)
			var err error
			if tt.batch {
				_, err = async.TryBatchEnrich(s, tt.lookup, col, joinProfile, tt.opts...)
			} else {
				_, err = async.TryEnrich(s, tt.lookup, col, joinProfile, tt.opts...)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

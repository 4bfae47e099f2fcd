package async_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// flaky fails some values: multiples of 10 permanently, multiples of 13 by
// panicking on every attempt, multiples of 7 on their first attempt only.
type flaky struct{}

func (*flaky) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	switch {
	case v%10 == 0:
		return async.Permanent(errors.New("rejected"))
	case v%13 == 0:
		panic(fmt.Sprintf("cannot handle %d", v))
	case v%7 == 0 && async.Attempt(ctx) == 1:
		return errors.New("try again")
	}
	emit(fmt.Sprintf("%s:%d", key, v))
	return nil
}

// flakyWant is what flaky gives for n inputs over keys: the outputs, and
// the failure records as describeFailure writes them, with MaxAttempts 3.
// A value that fails its first attempt only (v%7) succeeds on a retry, or,
// with noRetry (WithRetryIf saying no), is a failure record of one attempt.
func flakyWant(n, keys int, noRetry bool) (out, fail []any) {
	for i := 0; i < n; i++ {
		k, v := keyed(i, keys)
		switch {
		case v%10 == 0:
			fail = append(fail, fmt.Sprintf("%s/%d/permanent/1", k, v))
		case v%13 == 0:
			fail = append(fail, fmt.Sprintf("%s/%d/panic/3", k, v))
		case v%7 == 0 && noRetry:
			fail = append(fail, fmt.Sprintf("%s/%d/error/1", k, v))
		default:
			out = append(out, fmt.Sprintf("%s:%d", k, v))
		}
	}
	return out, fail
}

func describeFailure(f async.Failure) string {
	return fmt.Sprintf("%s/%s/%s/%d", f.KeyText, f.ValueText, f.Kind, f.Attempts)
}

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&flaky{})
	register.Function1x1(describeFailure)
}

func TestPipelineFailureOutput(t *testing.T) {
	const n, keys = 400, 9
	p, s := beam.NewPipelineWithRoot()
	out, failures := async.ParDoWithFailures(s, &flaky{}, input(s, n, keys),
		async.WithParallelism(16), async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(10*time.Millisecond)))
	wantOut, wantFail := flakyWant(n, keys, false)
	passert.EqualsList(s, out, wantOut)
	passert.EqualsList(s, beam.ParDo(s, describeFailure, failures), wantFail)
	ptest.RunAndValidate(t, p)
}

func TestPipelineMetrics(t *testing.T) {
	const n, keys = 200, 5
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope("enrich")
	async.ParDoWithFailures(s, &flaky{}, input(s, n, keys),
		async.WithParallelism(8), async.WithMaxItemsToBuffer(1000), async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(time.Millisecond)))
	want := map[string]int64{async.MetricAccepted: n, async.MetricFinished: n}
	for v := 0; v < n; v++ {
		switch {
		case v%10 == 0:
			want[async.MetricFailed]++
		case v%13 == 0:
			want[async.MetricFailed]++
			want[async.MetricRetried] += 2
		case v%7 == 0:
			want[async.MetricRetried]++
			want[async.MetricCommitted]++
		default:
			want[async.MetricCommitted]++
		}
	}
	// Each element's first call, and one more per retry; each commit, one success.
	want[async.MetricStarted] = n + want[async.MetricRetried]
	want[async.MetricSucceeded] = want[async.MetricCommitted]
	res := ptest.RunAndValidate(t, p)
	got := map[string]int64{}
	var latencies int64
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if strings.HasSuffix(c.Namespace(), "enrich/async.ParDoWithFailures") {
			got[c.Name()] += c.Result()
		}
	}
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if d.Key.Name == async.MetricLatency {
			latencies += d.Result().Count
		}
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("counter %s = %d, want %d", name, got[name], w)
		}
	}
	for _, name := range []string{async.MetricRescheduled, async.MetricCancelled, async.MetricDeduplicated} {
		if got[name] != 0 {
			t.Errorf("counter %s = %d, want 0", name, got[name])
		}
	}
	if latencies != n {
		t.Errorf("call latency distribution has %d samples, want %d", latencies, n)
	}
}

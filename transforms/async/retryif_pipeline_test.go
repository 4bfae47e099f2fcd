package async_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// notTryAgain is a retry predicate: flaky's "try again" is not retried,
// everything else is.
func notTryAgain(err error) bool { return !strings.Contains(err.Error(), "try again") }

func init() {
	register.Function1x1(notTryAgain)
}

// TestPipelineRetryIf runs WithRetryIf through a runner, on bounded and
// unbounded input: the predicate (a func(error) bool, which Beam's own
// function encoding cannot carry) reaches the workers, and decides. flaky's
// multiples of 7 fail their first attempt with "try again": not retried,
// they fail after one attempt; its panics are still retried to the limit.
func TestPipelineRetryIf(t *testing.T) {
	const n, keys = 140, 7
	wantFailures := func(label func(i int) string) (out, failed []any) {
		for i := 0; i < n; i++ {
			switch {
			case i%10 == 0:
				failed = append(failed, label(i)+"/permanent/1")
			case i%13 == 0:
				failed = append(failed, label(i)+"/panic/3")
			case i%7 == 0:
				failed = append(failed, label(i)+"/error/1")
			default:
				out = append(out, strings.ReplaceAll(label(i), "/", ":"))
			}
		}
		return out, failed
	}
	opts := []async.Option{async.WithParallelism(8), async.WithMaxAttempts(3),
		async.WithBackoff(async.FixedBackoff(5 * time.Millisecond)), async.WithRetryIf(notTryAgain)}

	t.Run("bounded", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		out, failures := async.ParDoWithFailures(s, &flaky{}, input(s, n, keys), opts...)
		wantOut, wantFail := wantFailures(func(i int) string { k, v := keyed(i, keys); return fmt.Sprintf("%s/%d", k, v) })
		passert.EqualsList(s, out, wantOut)
		passert.EqualsList(s, beam.ParDo(s, describeFailure, failures), wantFail)
		ptest.RunAndValidate(t, p)
	})
	t.Run("unbounded", func(t *testing.T) {
		const ticks = 7
		perTick := n / ticks
		interval := 100 * time.Millisecond
		start := time.Now().Truncate(time.Second)
		p, s := beam.NewPipelineWithRoot()
		impulses := periodic.Impulse(s, start, start.Add(ticks*interval), interval, false)
		elems := beam.ParDo(s, &fanOut{PerTick: perTick, Keys: keys, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
		out, failures := async.ParDoWithFailures(s, &flaky{}, elems, append(opts, async.WithCallbackFrequency(200*time.Millisecond))...)
		wantOut, wantFail := wantFailures(func(i int) string { return fmt.Sprintf("k%03d/%d", i%keys, i) })
		passert.EqualsList(s, out, wantOut)
		passert.EqualsList(s, beam.ParDo(s, describeFailure, failures), wantFail)
		ptest.RunAndValidate(t, p)
	})
}

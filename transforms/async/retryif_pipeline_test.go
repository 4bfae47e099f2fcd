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
	const n = 147 // inputOf's three ticks over its seven keys, whole
	for _, unbounded := range []bool{false, true} {
		t.Run(fmt.Sprintf("unbounded=%v", unbounded), func(t *testing.T) {
			wantOut, wantFail := flakyWant(n, 7, true)
			p, s := beam.NewPipelineWithRoot()
			out, failures := async.ParDoWithFailures(s, &flaky{}, inputOf(s, n, unbounded),
				async.WithParallelism(8), async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(5*time.Millisecond)),
				async.WithRetryIf(notTryAgain), async.WithCallbackFrequency(200*time.Millisecond))
			passert.EqualsList(s, out, wantOut)
			passert.EqualsList(s, beam.ParDo(s, describeFailure, failures), wantFail)
			ptest.RunAndValidate(t, p)
		})
	}
}

package async_test

import (
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// A service of unknown capacity: the limit starts at 2 calls at once and
// moves up to 32 while the service's latency stays near its lowest, down
// when calls queue, time out or are refused for load (async.Overloaded, or
// async.CheckResponse on a 429 or 503).
func ExampleWithAdaptiveParallelism() {
	p, s := beam.NewPipelineWithRoot()
	labels := async.ParDo(s, &slowLabel{SleepMs: 5}, input(s, 100, 10),
		async.WithAdaptiveParallelism(2, 32), async.WithCallTimeout(time.Second), async.WithMaxAttempts(3))
	passert.Count(s, labels, "labels", 100)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

// A service that sheds up to a tenth of its calls with 503 at random,
// whatever the load: each worker paces its attempts only once the service
// refuses more than 30% of them (the default is 20%), and then sends about
// 1/(1 - 0.3) times what it accepts.
func ExampleWithOverloadThreshold() {
	p, s := beam.NewPipelineWithRoot()
	labels := async.ParDo(s, &slowLabel{SleepMs: 5}, input(s, 100, 10),
		async.WithOverloadThreshold(0.3), async.WithMaxAttempts(5))
	passert.Count(s, labels, "labels", 100)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

// At most 200 calls a second start on each worker, in bursts of at most 10.
// async.WithSharedRateLimit caps all workers together instead, through
// Redis.
func ExampleWithRateLimit() {
	p, s := beam.NewPipelineWithRoot()
	labels := async.ParDo(s, &slowLabel{SleepMs: 5}, input(s, 100, 10),
		async.WithRateLimit(200, 10), async.WithParallelism(16))
	passert.Count(s, labels, "labels", 100)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

package async_test

import (
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// Each worker keeps up to 10,000 results for 10 minutes: an element whose
// key and value were called before takes that call's outputs, with its own
// timestamp and window, and copies in flight wait for the one call. To look
// something up by part of a record (a customer's profile, whatever the
// record asking for it) and merge it in, key the records by the lookup key
// and use async.Enrich, whose cache is keyed by it. Cache.Redis and
// Cache.Prefix share the results among workers.
func ExampleWithCache() {
	p, s := beam.NewPipelineWithRoot()
	labels := async.ParDo(s, &slowLabel{SleepMs: 5}, input(s, 100, 10),
		async.WithCache(async.Cache{Size: 10_000, TTL: 10 * time.Minute}))
	passert.Count(s, labels, "labels", 100)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

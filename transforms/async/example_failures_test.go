package async_test

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// reorder turns a failed order back into the order, to send it again later.
func reorder(f async.Failure) (int64, order, error) {
	return async.DecodeFailure[int64, order](f)
}

func init() { register.Function1x3(reorder) }

// The orders the desk rejects come back as the input's own keys and values,
// ready for another pipeline step; ValueText shows them as JSON.
func ExampleDecodeFailure() {
	p, s := beam.NewPipelineWithRoot()
	orders := beam.ParDo(s, orderOf, beam.Create(s, 3, 10, 12))
	_, failures := async.ParDoWithFailures(s, &orderDesk{}, orders)
	again := beam.ParDo(s, reorder, failures) // PCollection<KV<int64, order>>
	passert.Equals(s, beam.DropKey(s, again), order{SKU: "sku-3", Qty: 10})
	passert.Equals(s, beam.ParDo(s, rejectedOrder, failures), `10 sku-3 x10 {"SKU":"sku-3","Qty":10} permanent`)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

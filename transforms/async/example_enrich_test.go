package async_test

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// customerTier is a slow lookup: a customer's tier, by customer ID.
func customerTier(ctx context.Context, customer string) (string, error) {
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if customer == "c1" {
		return "gold", nil
	}
	return "silver", nil
}

// orderWithTier merges an order's amount and its customer's tier.
func orderWithTier(amount int, tier string) string { return fmt.Sprintf("%d (%s)", amount, tier) }

// parseOrder keys an order "customer:amount" by its customer.
func parseOrder(order string) (string, int) { return order[:2], int(order[3] - '0') }

func init() {
	register.Function1x2(parseOrder)
	register.Function2x2[context.Context, string, string, error](customerTier)
	register.Function2x1[int, string, string](orderWithTier)
}

// Orders keyed by customer are enriched with their customer's tier: one
// lookup per customer (answers are cached per key, 10,000 for 10 minutes
// per worker by default; WithCache changes it), each order joined with its
// own customer's answer.
func ExampleEnrich() {
	p, s := beam.NewPipelineWithRoot()
	orders := beam.ParDo(s, parseOrder, beam.Create(s, "c1:5", "c2:7", "c1:9"))
	enriched := async.Enrich(s, customerTier, orders, orderWithTier, async.WithParallelism(4))
	passert.Equals(s, enriched, "5 (gold)", "7 (silver)", "9 (gold)")
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

// customerTiers is a batch lookup (a multi-get): the tier of each customer
// in one call, answers in the keys' order.
func customerTiers(ctx context.Context, customers []string) ([]string, error) {
	tiers := make([]string, len(customers))
	for i, c := range customers {
		tier, err := customerTier(ctx, c)
		if err != nil {
			return nil, err
		}
		tiers[i] = tier
	}
	return tiers, nil
}

func init() {
	register.Function2x2[context.Context, []string, []string, error](customerTiers)
}

// The same enrichment with a lookup that takes up to 100 customers per
// call: distinct customers are gathered into requests, each order is
// joined with its own customer's answer.
func ExampleBatchEnrich() {
	p, s := beam.NewPipelineWithRoot()
	orders := beam.ParDo(s, parseOrder, beam.Create(s, "c1:5", "c2:7", "c1:9"))
	enriched := async.BatchEnrich(s, customerTiers, orders, orderWithTier, async.WithBatchSize(100))
	passert.Equals(s, enriched, "5 (gold)", "7 (silver)", "9 (gold)")
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

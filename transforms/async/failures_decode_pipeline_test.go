package async_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// order is a struct input value.
type order struct {
	SKU string
	Qty int
}

// orderOf is the order of element i, keyed by its number.
func orderOf(i int) (int64, order) { return int64(i), order{SKU: fmt.Sprintf("sku-%d", i%7), Qty: i} }

// stampedOrder gives order i the event time of minute i%4.
func stampedOrder(i int, emit func(beam.EventTime, int64, order)) {
	k, o := orderOf(i)
	emit(mtime.FromTime(time.Unix(0, 0).Add(time.Duration(i%4)*time.Minute)), k, o)
}

// orderTicks turns each impulse of an unbounded source into PerTick orders,
// numbered from the impulse's timestamp.
type orderTicks struct {
	PerTick             int
	StartMs, IntervalMs int64
}

func (f *orderTicks) ProcessElement(ts beam.EventTime, _ []byte, emit func(int64, order)) {
	tick := int((int64(ts) - f.StartMs) / f.IntervalMs)
	for i := 0; i < f.PerTick; i++ {
		emit(orderOf(tick*f.PerTick + i))
	}
}

// orderDesk takes orders, but rejects for good those whose quantity is a
// multiple of 5.
type orderDesk struct{}

func (*orderDesk) ProcessElement(ctx context.Context, id int64, o order, emit func(string)) error {
	if o.Qty%5 == 0 {
		return async.Permanent(fmt.Errorf("no stock of %s", o.SKU))
	}
	emit(fmt.Sprintf("%d:%s", id, o.SKU))
	return nil
}

// rejectedOrder decodes a failure record of orderDesk back to its order.
func rejectedOrder(f async.Failure) (string, error) {
	id, o, err := async.DecodeFailure[int64, order](f)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %s x%d %s %s", id, o.SKU, o.Qty, f.ValueText, f.Kind), nil
}

func init() {
	beam.RegisterType(reflect.TypeOf(order{}))
	register.Function1x2(orderOf)
	register.Function2x0(stampedOrder)
	register.DoFn3x0[beam.EventTime, []byte, func(int64, order)](&orderTicks{})
	register.DoFn4x1[context.Context, int64, order, func(string), error](&orderDesk{})
	register.Function1x2(rejectedOrder)
	register.Emitter2[int64, order]()
	register.Emitter3[beam.EventTime, int64, order]()
}

// ordersIn is n orders: bounded or from an unbounded source (ten ticks
// 100 ms apart), in the global window or in fixed windows.
func ordersIn(s beam.Scope, n int, unbounded, windowed bool) beam.PCollection {
	var orders beam.PCollection
	switch {
	case unbounded:
		const ticks = 10
		interval := 100 * time.Millisecond
		start := time.Now().Truncate(time.Second)
		impulses := periodic.Impulse(s, start, start.Add(ticks*interval), interval, false)
		orders = beam.ParDo(s, &orderTicks{PerTick: n / ticks, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
	case windowed:
		orders = beam.ParDo(s, stampedOrder, beam.CreateList(s, ints(n)))
	default:
		orders = beam.ParDo(s, orderOf, beam.CreateList(s, ints(n)))
	}
	if windowed {
		orders = beam.WindowInto(s, window.NewFixedWindows(time.Minute), orders)
	}
	return orders
}

func ints(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestPipelineDecodeFailures: every failure record decodes back to its
// input's key and value (an int64 and a struct, printed as JSON), on
// bounded and unbounded input, in the global window and in fixed windows.
func TestPipelineDecodeFailures(t *testing.T) {
	const n = 100
	var want []any
	for i := 0; i < n; i += 5 {
		id, o := orderOf(i)
		want = append(want, fmt.Sprintf(`%d %s x%d {"SKU":%q,"Qty":%d} %s`, id, o.SKU, o.Qty, o.SKU, o.Qty, async.KindPermanent))
	}
	for _, tc := range []struct {
		name                string
		unbounded, windowed bool
	}{
		{"bounded", false, false},
		{"unbounded", true, false},
		{"bounded, fixed windows", false, true},
		{"unbounded, fixed windows", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			out, failures := async.ParDoWithFailures(s, &orderDesk{}, ordersIn(s, n, tc.unbounded, tc.windowed),
				async.WithParallelism(8), async.WithCallbackFrequency(200*time.Millisecond))
			global := window.NewGlobalWindows()
			passert.Count(s, beam.WindowInto(s, global, out), "outputs", n-len(want))
			passert.EqualsList(s, beam.WindowInto(s, global, beam.ParDo(s, rejectedOrder, failures)), want)
			ptest.RunAndValidate(t, p)
		})
	}
}

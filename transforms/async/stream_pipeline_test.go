package async_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// fanOut turns each impulse of an unbounded source into PerTick keyed
// elements, numbered from the impulse's timestamp.
type fanOut struct {
	PerTick, Keys int
	StartMs       int64
	IntervalMs    int64
}

func (f *fanOut) ProcessElement(ts beam.EventTime, _ []byte, emit func(string, int)) {
	tick := int((int64(ts) - f.StartMs) / f.IntervalMs)
	for i := 0; i < f.PerTick; i++ {
		keyed := tick*f.PerTick + i
		emit(fmt.Sprintf("k%03d", keyed%f.Keys), keyed)
	}
}

func init() {
	register.DoFn3x0[beam.EventTime, []byte, func(string, int)](&fanOut{})
	register.Emitter2[string, int]()
}

// TestPipelineUnboundedInput runs the transform on an unbounded source, so
// that the processing-time commit timers (not the drain) commit every output:
// small bundles, as in streaming, each element exactly once.
func TestPipelineUnboundedInput(t *testing.T) {
	const ticks, perTick, keys = 10, 20, 7
	interval := 100 * time.Millisecond
	start := time.Now().Truncate(time.Second)
	p, s := beam.NewPipelineWithRoot()
	impulses := periodic.Impulse(s, start, start.Add(ticks*interval), interval, false)
	elems := beam.ParDo(s, &fanOut{PerTick: perTick, Keys: keys, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
	out := async.ParDo(s, &slowLabel{SleepMs: 5}, elems, async.WithParallelism(8), async.WithCallbackFrequency(200*time.Millisecond))
	var want []any
	for i := 0; i < ticks*perTick; i++ {
		want = append(want, fmt.Sprintf("k%03d:%d", i%keys, i))
	}
	passert.EqualsList(s, out, want)
	began := time.Now()
	ptest.RunAndValidate(t, p)
	t.Logf("%d elements from an unbounded source in %v", len(want), time.Since(began))
}

package async_test

import (
	"fmt"
	"math"
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

type unregistered struct{}

func (*unregistered) ProcessElement(key string, v int, emit func(string)) {}

type unregisteredListener struct{}

func (*unregisteredListener) OnEvent(async.Event) {}

type wrongShape struct{}

func (*wrongShape) ProcessElement(v int, emit func(string)) {}

type badSetup struct{}

func (*badSetup) Setup(x int)                                         {}
func (*badSetup) ProcessElement(key string, v int, emit func(string)) {}

// upper is a plain registered function of the wrapped shape.
func upper(key string, v int, emit func(string)) { emit(strings.ToUpper(key) + fmt.Sprint(v)) }

func valueID(v int) string { return fmt.Sprint(v) }

func init() {
	register.DoFn2x0[int, func(string)](&wrongShape{})
	beam.RegisterType(reflect.TypeOf(badSetup{}))
	register.Function3x0(upper)
	register.Function1x1(valueID)
}

func TestTryParDoConstructionErrors(t *testing.T) {
	tests := []struct {
		name string
		fn   any
		kv   bool
		opts []async.Option
		want string
	}{
		{"input not KV", &slowLabel{}, false, nil, "PCollection<KV<K, V>>"},
		{"nil fn", nil, true, nil, "fn is nil"},
		{"nil pointer", (*slowLabel)(nil), true, nil, "nil *async_test.slowLabel"},
		{"struct value", slowLabel{}, true, nil, "pass a pointer"},
		{"not registered", &unregistered{}, true, nil, "not registered"},
		{"wrong shape", &wrongShape{}, true, nil, "ProcessElement([ctx context.Context,] [w beam.Window,] [t beam.EventTime,] key K, value V, emit func(O)"},
		{"wrong Setup", &badSetup{}, true, nil, "Setup has signature"},
		{"closure", func(k string, v int, emit func(string)) {}, true, nil, "closure"},
		{"parallelism 0", &slowLabel{}, true, []async.Option{async.WithParallelism(0)}, "WithParallelism(0)"},
		{"negative frequency", &slowLabel{}, true, []async.Option{async.WithCallbackFrequency(-time.Second)}, "WithCallbackFrequency"},
		{"zero frequency", &slowLabel{}, true, []async.Option{async.WithCallbackFrequency(0)}, "must be > 0"},
		{"buffer below parallelism", &slowLabel{}, true, []async.Option{async.WithParallelism(8), async.WithMaxItemsToBuffer(4)}, "smaller than the parallelism"},
		{"negative wait", &slowLabel{}, true, []async.Option{async.WithMaxWait(-1)}, "WithMaxWait"},
		{"ID fn of wrong type", &slowLabel{}, true, []async.Option{async.WithIDFn(strings.ToUpper)}, "want func(int) string"},
		{"nil option", &slowLabel{}, true, []async.Option{nil}, "nil Option"},
		{"priority fn of wrong type", &slowLabel{}, true, []async.Option{async.WithPriority(valueID)}, "want func(int) int"},
		{"priority closure", &slowLabel{}, true, []async.Option{async.WithPriority(func(v int) int { return v })}, "closure"},
		{"nil listener", &slowLabel{}, true, []async.Option{async.WithListener(nil)}, "listener is nil"},
		{"nil listener pointer", &slowLabel{}, true, []async.Option{async.WithListener((*async.LogListener)(nil))}, "listener is nil"},
		{"unregistered listener", &slowLabel{}, true, []async.Option{async.WithListener(&unregisteredListener{})}, "beam.RegisterType"},
		{"listener without path", &slowLabel{}, true, []async.Option{async.WithListener(&async.JSONLinesListener{})}, "Path is empty"},
		{"rate 0", &slowLabel{}, true, []async.Option{async.WithRateLimit(0, 1)}, "WithRateLimit(0, 1): want a rate > 0"},
		{"burst 0", &slowLabel{}, true, []async.Option{async.WithRateLimit(10, 0)}, "a burst >= 1"},
		{"shared rate without Redis", &slowLabel{}, true, []async.Option{async.WithSharedRateLimit(async.SharedRateLimit{Key: "k", PerSecond: 1, Burst: 1})}, "WithSharedRateLimit: the Redis address is empty"},
		{"shared rate without key", &slowLabel{}, true, []async.Option{async.WithSharedRateLimit(async.SharedRateLimit{Redis: "localhost:6379", PerSecond: 1, Burst: 1})}, "bucket key is empty"},
		{"adaptive min 0", &slowLabel{}, true, []async.Option{async.WithAdaptiveParallelism(0, 8)}, "want 1 <= min <= max"},
		{"adaptive max below min", &slowLabel{}, true, []async.Option{async.WithAdaptiveParallelism(8, 4)}, "want 1 <= min <= max"},
		{"adaptive and fixed", &slowLabel{}, true, []async.Option{async.WithParallelism(16), async.WithAdaptiveParallelism(1, 32)}, "keep one"},
		{"negative budget", &slowLabel{}, true, []async.Option{async.WithRetryBudget(-0.1)}, "want a share >= 0"},
		{"overload threshold 0", &slowLabel{}, true, []async.Option{async.WithOverloadThreshold(0)}, "WithOverloadThreshold(0): want a share of refused attempts between 0 and 1"},
		{"overload threshold 1", &slowLabel{}, true, []async.Option{async.WithOverloadThreshold(1)}, "WithOverloadThreshold(1): want"},
		{"overload threshold negative", &slowLabel{}, true, []async.Option{async.WithOverloadThreshold(-0.2)}, "WithOverloadThreshold(-0.2): want"},
		{"overload threshold NaN", &slowLabel{}, true, []async.Option{async.WithOverloadThreshold(math.NaN())}, "WithOverloadThreshold(NaN): want"},
		{"cache size 0", &slowLabel{}, true, []async.Option{async.WithCache(async.Cache{TTL: time.Minute})}, "WithCache: Size 0: want > 0"},
		{"cache without TTL", &slowLabel{}, true, []async.Option{async.WithCache(async.Cache{Size: 10})}, "WithCache: TTL 0s: want > 0"},
		{"cache key fn refused", &slowLabel{}, true, []async.Option{async.WithCache(async.Cache{Size: 10, TTL: time.Minute, KeyFn: strings.ToUpper})}, "use async.Enrich (records keyed by the lookup key)"},
		{"shared cache without prefix", &slowLabel{}, true, []async.Option{async.WithCache(async.Cache{Size: 10, TTL: time.Minute, Redis: "localhost:6379"})}, "WithCache: the key prefix is empty"},
		{"shared cache TTL under a second", &slowLabel{}, true, []async.Option{async.WithCache(async.Cache{Size: 10, TTL: time.Millisecond, Redis: "localhost:6379", Prefix: "p"})}, "at least 1s"},
		{"batch option on ParDo", &slowLabel{}, true, []async.Option{async.WithBatchSize(10)}, "WithBatchSize(10): batch options apply to async.BatchParDo"},
		{"batch fn on ParDo", &batchLabel{}, true, nil, "has ProcessBatch but no ProcessElement: use async.BatchParDo"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			col := beam.Create(s, 1, 2)
			if tc.kv {
				col = beam.ParDo(s, &keyBy{Keys: 2}, col)
			}
			_, err := async.TryParDo(s, tc.fn, col, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("TryParDo error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// badBatchBundle is a batch fn with a bundle method.
type badBatchBundle struct{ batchLabel }

func (*badBatchBundle) StartBundle() {}

// unregisteredBatch is a batch fn nobody registered.
type unregisteredBatch struct{ batchLabel }

func init() { beam.RegisterType(reflect.TypeOf((*badBatchBundle)(nil)).Elem()) }

func TestTryBatchParDoConstructionErrors(t *testing.T) {
	tests := []struct {
		name string
		fn   any
		opts []async.Option
		want string
	}{
		{"per-element fn", &slowLabel{}, nil, "has ProcessElement but no ProcessBatch: use async.ParDo"},
		{"not registered", &unregisteredBatch{}, nil, "batch fn type async_test.unregisteredBatch is not registered: call beam.RegisterType"},
		{"wrong emitter", func(keys []string, values []int, emit func(string)) {}, nil, "not an emitter func(i int, out O)"},
		{"wrong values", func(keys []string, values []string, emit func(int, string)) {}, nil, "the values parameter is []string"},
		{"wrong returns", func(keys []string, values []int, emit func(int, string)) []error { return nil }, nil, "want nothing, an error, or ([]error, error)"},
		{"bundle method", &badBatchBundle{}, nil, "a batch fn may have Setup and Teardown, not bundle methods"},
		{"batch size 0", &batchLabel{}, []async.Option{async.WithBatchSize(0)}, "WithBatchSize(0): the batch size must be > 0"},
		{"negative wait", &batchLabel{}, []async.Option{async.WithBatchWait(-time.Second)}, "WithBatchWait(-1s)"},
		{"fallbacks", &batchLabel{}, []async.Option{async.WithFallbacks("a", "b")}, "WithFallbacks does not apply to async.BatchParDo"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			col := beam.ParDo(s, &keyBy{Keys: 2}, beam.Create(s, 1, 2))
			_, err := async.TryBatchParDo(s, tc.fn, col, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("TryBatchParDo error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParDoPanicsWithTheError(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "PCollection<KV<K, V>>") {
			t.Errorf("ParDo on a non-KV input panicked with %v, want the TryParDo error", r)
		}
	}()
	_, s := beam.NewPipelineWithRoot()
	async.ParDo(s, &slowLabel{}, beam.Create(s, 1))
}

func TestPipelineFunctionAndIDFn(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	out := async.ParDo(s, upper, input(s, 40, 4), async.WithIDFn(valueID), async.WithParallelism(4))
	var want []any
	for i := 0; i < 40; i++ {
		k, v := keyed(i, 4)
		want = append(want, strings.ToUpper(k)+fmt.Sprint(v))
	}
	passert.EqualsList(s, out, want)
	ptest.RunAndValidate(t, p)
}

// Example wraps an existing synchronous DoFn: the calls run up to 32 at a
// time, and every output is committed exactly once.
func Example() {
	p, s := beam.NewPipelineWithRoot()
	keyedInput := input(s, 100, 10) // PCollection<KV<string, int>>
	labels := async.ParDo(s, &slowLabel{SleepMs: 20}, keyedInput,
		async.WithParallelism(32), async.WithCallbackFrequency(500*time.Millisecond))
	passert.Count(s, labels, "labels", 100)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

// sizeOf reports the size of a large value.
type sizeOf struct{}

func (*sizeOf) ProcessElement(key string, v []byte, emit func(int)) { emit(len(v)) }

type bigValues struct{ MB int }

func (f *bigValues) ProcessElement(i int) (string, []byte) {
	return fmt.Sprint("k", i%2), make([]byte, f.MB<<20+i)
}

func init() {
	register.DoFn3x0[string, []byte, func(int)](&sizeOf{})
	register.DoFn1x2[int, string, []byte](&bigValues{})
	register.Emitter1[int]()
}

func TestPipelineValuesOfSeveralMB(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	big := beam.ParDo(s, &bigValues{MB: 4}, beam.Create(s, 0, 1, 2))
	passert.Equals(s, async.ParDo(s, &sizeOf{}, big), 4<<20, 4<<20+1, 4<<20+2)
	ptest.RunAndValidate(t, p)
}

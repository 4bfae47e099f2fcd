package async_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// upperBatch stands for a bulk endpoint: one call labels many values, and
// refuses the empty ones.
type upperBatch struct{}

func (upperBatch) ProcessBatch(ctx context.Context, keys, values []string, emit func(int, string)) ([]error, error) {
	errs := make([]error, len(values))
	for i, v := range values {
		if v == "" {
			errs[i] = async.Permanent(fmt.Errorf("key %s: an empty value", keys[i]))
			continue
		}
		emit(i, strings.ToUpper(v))
	}
	return errs, nil
}

// keyedBySelf keys a word by itself.
func keyedBySelf(w string) (string, string) { return w, w }

func init() {
	beam.RegisterType(reflect.TypeOf((*upperBatch)(nil)).Elem())
	register.Function1x2(keyedBySelf)
}

// A batch fn takes up to WithBatchSize elements per call, as parallel lists
// of keys and values, emits outputs by element index, and returns an error
// per element (and one for the whole request). Each element is still
// committed, retried and reported on its own; WithParallelism counts calls.
func ExampleBatchParDo() {
	p, s := beam.NewPipelineWithRoot()
	words := beam.ParDo(s, keyedBySelf, beam.Create(s, "a", "b", "", "c"))
	upper, failures := async.BatchParDoWithFailures(s, &upperBatch{}, words,
		async.WithBatchSize(100), async.WithBatchWait(10*time.Millisecond), async.WithParallelism(4))
	passert.Equals(s, upper, "A", "B", "C")
	passert.Count(s, failures, "failures", 1)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

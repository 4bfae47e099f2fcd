package async_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/runner/nosplit"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// TestMain runs the pipeline tests on prism without prism's splits of
// running bundles (prism_disable_sdf_split, which every transform adds when
// built, see runner/nosplit), unless -experiments is given, so that the
// pipelines that build no transform run without them too. Beam Go v2.78.0
// also splits periodic.Impulse while its ProcessElement updates its
// watermark estimator, a data race in Beam's code (core/sdf/
// watermark_estimator.go, read by a split, written by the element) that the
// race detector reports now and then.
func TestMain(m *testing.M) {
	flag.Parse()
	if *jobopts.Experiments == "" {
		*jobopts.Experiments = nosplit.Experiment
	}
	ptest.Main(m)
}

// slowLabel is a wrapped DoFn: it waits SleepMs, then emits "key:value".
type slowLabel struct {
	SleepMs int
	Copies  int
}

func (f *slowLabel) ProcessElement(ctx context.Context, key string, value int, emit func(string)) error {
	select {
	case <-time.After(time.Duration(f.SleepMs) * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	for i := 0; i < max(f.Copies, 1); i++ {
		if f.Copies > 1 {
			emit(fmt.Sprintf("%s:%d#%d", key, value, i))
			continue
		}
		emit(fmt.Sprintf("%s:%d", key, value))
	}
	return nil
}

func keyed(i, keys int) (string, int) { return fmt.Sprintf("k%03d", i%keys), i }

// keyBy spreads integers over Keys keys.
type keyBy struct{ Keys int }

func (f *keyBy) ProcessElement(i int) (string, int) { return keyed(i, f.Keys) }

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&slowLabel{})
	register.Emitter1[string]()
	register.DoFn1x2[int, string, int](&keyBy{})
}

// input makes n elements over the given number of keys.
func input(s beam.Scope, n, keys int) beam.PCollection {
	ints := make([]int, n)
	for i := range ints {
		ints[i] = i
	}
	col := beam.CreateList(s, ints)
	return beam.ParDo(s, &keyBy{Keys: keys}, col)
}

func expected(n, keys, copies int) []any {
	var want []any
	for i := 0; i < n; i++ {
		k, v := keyed(i, keys)
		if copies > 1 {
			for c := 0; c < copies; c++ {
				want = append(want, fmt.Sprintf("%s:%d#%d", k, v, c))
			}
			continue
		}
		want = append(want, fmt.Sprintf("%s:%d", k, v))
	}
	return want
}

func TestPipelineEveryOutputExactlyOnce(t *testing.T) {
	tests := []struct {
		name          string
		n, keys, copy int
		opts          []async.Option
	}{
		{"thousands over many keys", 3000, 60, 1, []async.Option{async.WithParallelism(32)}},
		{"several outputs per element", 300, 7, 3, []async.Option{async.WithParallelism(8)}},
		{"one hot key", 1000, 1, 1, []async.Option{async.WithParallelism(16)}},
		{"empty input", 0, 1, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			out := async.ParDo(s, &slowLabel{SleepMs: 5, Copies: tc.copy}, input(s, tc.n, tc.keys), tc.opts...)
			want := expected(tc.n, tc.keys, tc.copy)
			if len(want) == 0 {
				passert.Empty(s, out)
			} else {
				passert.EqualsList(s, out, want)
			}
			start := time.Now()
			ptest.RunAndValidate(t, p)
			t.Logf("%d elements in %v", tc.n, time.Since(start))
		})
	}
}

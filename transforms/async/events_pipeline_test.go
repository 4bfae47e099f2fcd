package async_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// jitterLabel takes a pseudo-random 0-15 ms per element, so that calls of a
// key finish out of order, and reports its progress half-way.
type jitterLabel struct{}

func (f *jitterLabel) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", key, v)
	if err := async.ReportProgress(ctx, 0.5, "half-way"); err != nil {
		return err
	}
	select {
	case <-time.After(time.Duration(h.Sum32()%16) * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	emit(fmt.Sprintf("%s:%d", key, v))
	return nil
}

// explodingListener panics on every event.
type explodingListener struct{}

func (*explodingListener) OnEvent(async.Event) { panic("listener exploded") }

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&jitterLabel{})
	beam.RegisterType(reflect.TypeOf(explodingListener{}))
}

// TestPipelineOrderedWithEvents runs the ordered transform on prism, on
// bounded and on unbounded input, with the JSON Lines listener: for every
// key, the order of the committed events must be the order of the accepted
// ones, each element committed once, and the outputs complete.
func TestPipelineOrderedWithEvents(t *testing.T) {
	tests := []struct {
		name      string
		unbounded bool
	}{
		{"bounded", false},
		{"unbounded", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const n, keys = 240, 6
			path := filepath.Join(t.TempDir(), "events.jsonl")
			p, s := beam.NewPipelineWithRoot()
			var col beam.PCollection
			if tc.unbounded {
				const ticks = 8
				interval := 100 * time.Millisecond
				start := time.Now().Truncate(time.Second)
				impulses := periodic.Impulse(s, start, start.Add(ticks*interval), interval, false)
				col = beam.ParDo(s, &fanOut{PerTick: n / ticks, Keys: keys, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
			} else {
				col = input(s, n, keys)
			}
			out := async.ParDo(s, &jitterLabel{}, col, async.WithOrdered(), async.WithParallelism(8), async.WithMaxItemsToBuffer(16),
				async.WithCallbackFrequency(200*time.Millisecond), async.WithListener(&async.JSONLinesListener{Path: path}))
			passert.Count(s, out, "outputs", n)
			ptest.RunAndValidate(t, p)

			events, err := async.ReadEvents(path)
			if err != nil {
				t.Fatal(err)
			}
			accepted, committed := map[string][]string{}, map[string][]string{}
			seen := map[string]bool{}
			progress := 0
			for _, e := range events {
				id := e.KeyText + "/" + e.ElementID
				switch e.Type {
				case async.EventAccepted:
					if !seen[id] { // a copy is not a new place in the order
						accepted[e.KeyText] = append(accepted[e.KeyText], e.ElementID)
						seen[id] = true
					}
				case async.EventCommitted:
					committed[e.KeyText] = append(committed[e.KeyText], e.ElementID)
				case async.EventProgress:
					progress++
				}
			}
			if len(accepted) != keys {
				t.Fatalf("accepted events for %d keys, want %d", len(accepted), keys)
			}
			for key, want := range accepted {
				if got := committed[key]; !reflect.DeepEqual(got, want) {
					t.Errorf("key %s: %d committed in order %v, want the %d accepted in order %v", key, len(got), got, len(want), want)
				}
			}
			if progress < n {
				t.Errorf("%d progress events, want at least %d", progress, n)
			}
		})
	}
}

// TestPipelineListenerPanicsAndProgressMetrics: a listener that always
// panics changes no output; its panics and the calls' progress reports are
// counted in the transform's metrics.
func TestPipelineListenerPanicsAndProgressMetrics(t *testing.T) {
	const n, keys = 60, 4
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope("events")
	out := async.ParDo(s, &jitterLabel{}, input(s, n, keys), async.WithParallelism(8), async.WithListener(&explodingListener{}))
	passert.Count(s, out, "outputs", n)
	res := ptest.RunAndValidate(t, p)
	got := map[string]int64{}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if strings.HasSuffix(c.Namespace(), "events/async.ParDo") {
			got[c.Name()] += c.Result()
		}
	}
	if got[async.MetricListenerPanics] < 4*n { // accepted, started, progress, succeeded, committed
		t.Errorf("counter %s = %d, want at least %d", async.MetricListenerPanics, got[async.MetricListenerPanics], 4*n)
	}
	if got[async.MetricProgressReports] != n {
		t.Errorf("counter %s = %d, want %d", async.MetricProgressReports, got[async.MetricProgressReports], n)
	}
}

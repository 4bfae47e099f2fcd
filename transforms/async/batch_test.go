package async

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
	"github.com/asyncbeam/asyncbeam/transforms/cache"
)

// labelBatch labels each value, and panics on a request holding 99.
type labelBatch struct{}

func (labelBatch) ProcessBatch(keys []string, values []int, emit func(int, string)) {
	for i, v := range values {
		if v == 99 {
			panic("cannot label 99")
		}
		emit(i, fmt.Sprintf("%s:%d", keys[i], v))
	}
}

func init() { beam.RegisterType(reflect.TypeOf((*labelBatch)(nil)).Elem()) }

// batchCore is a set-up core of a BatchParDo of labelBatch; edits change
// it before its Setup.
func batchCore(t *testing.T, edits ...func(*worker.Core)) *worker.Core {
	t.Helper()
	spec, _, err := wrapped.InspectBatch(&labelBatch{}, reflect.TypeOf(""), reflect.TypeOf(0))
	if err != nil {
		t.Fatal(err)
	}
	f := &worker.Core{Config: terms.Config{ID: uuid.NewString(), User: spec, KeyType: beam.EncodedType{T: reflect.TypeOf("")}, ValueType: beam.EncodedType{T: reflect.TypeOf(0)},
		Parallelism: 1, Buffer: 1, Held: 1, CallbackFrequency: time.Second, MaxAttempts: 1, OutputType: &beam.EncodedType{T: reflect.TypeOf("")},
		Batch: &terms.BatchSpec{Size: 3}}}
	f.SetRegistry(state.NewRegistry())
	for _, edit := range edits {
		edit(f)
	}
	if err := f.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSendBatchRunsEveryAfterOnce: whatever panics in a request (the fn, or
// one element's after: an output coder, the cache), every element's after
// runs exactly once, so that no cache lead is left open; a panic in one
// element's after fails that element alone.
func TestSendBatchRunsEveryAfterOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		values    []int
		panicsFor int // the element whose after panics, or -1
		want      []string
	}{
		{"the fn panics", []int{1, 99, 3}, -1, []string{"panic", "panic", "panic"}},
		{"one after panics", []int{1, 2, 3}, 1, []string{"k:1", "panic", "k:3"}},
		{"all well", []int{1, 2, 3}, -1, []string{"k:1", "k:2", "k:3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := batchCore(t)
			afters := make([]int, len(tc.values))
			var items []state.BatchItem
			for i, v := range tc.values {
				b := &worker.BatchItem{F: f, El: worker.Element{Key: "k", Value: v}}
				b.After = func(ctx context.Context, attempt int, answer func() ([]any, error), store func(cache.Entry)) ([]any, error) {
					afters[i]++
					if i == tc.panicsFor {
						panic("an output coder failed")
					}
					return answer()
				}
				items = append(items, state.BatchItem{Item: b, Attempt: 1, Ctx: context.Background()})
			}
			outcomes, err := worker.SendBatch(context.Background(), items)
			for i := range tc.values {
				got := "panic"
				var pe *state.PanicError
				switch {
				case err != nil && errors.As(err, &pe):
				case err != nil:
					got = err.Error()
				case outcomes[i].Err != nil && errors.As(outcomes[i].Err, &pe):
				case outcomes[i].Err != nil:
					got = outcomes[i].Err.Error()
				default:
					got = fmt.Sprint(outcomes[i].Outputs...)
				}
				if got != tc.want[i] || afters[i] != 1 {
					t.Errorf("element %d: got %q with after run %d times; want %q, after run once", i, got, afters[i], tc.want[i])
				}
			}
		})
	}
}

// TestBatchDefaults: a BatchParDo's buffer lets batches fill (2 × P ×
// size), and its held bound follows async.ParDo's rule over the elements in
// flight (64 × P × size), never below a buffer the user set; a held bound
// set below the buffer is refused; async.ParDo's defaults are unchanged.
func TestBatchDefaults(t *testing.T) {
	tests := []struct {
		name                 string
		opts                 []Option
		wantBuffer, wantHeld int
		wantErr              string
	}{
		{name: "ParDo", opts: []Option{WithParallelism(8)}, wantBuffer: 16, wantHeld: 512},
		{name: "batches of 50", opts: []Option{batched, WithParallelism(8), WithBatchSize(50)}, wantBuffer: 800, wantHeld: 25600},
		{name: "default size", opts: []Option{batched, WithParallelism(2)}, wantBuffer: 2 * 2 * DefaultBatchSize, wantHeld: 64 * 2 * DefaultBatchSize},
		{name: "a larger buffer", opts: []Option{batched, WithParallelism(1), WithBatchSize(2), WithMaxItemsToBuffer(1000)}, wantBuffer: 1000, wantHeld: 1000},
		{name: "held set", opts: []Option{batched, WithParallelism(8), WithBatchSize(50), WithMaxItemsHeld(900)}, wantBuffer: 800, wantHeld: 900},
		{name: "both set", opts: []Option{batched, WithParallelism(8), WithBatchSize(50), WithMaxItemsToBuffer(100), WithMaxItemsHeld(300)}, wantBuffer: 100, wantHeld: 300},
		{name: "held below the default buffer", opts: []Option{batched, WithParallelism(8), WithBatchSize(50), WithMaxItemsHeld(500)}, wantErr: "WithMaxItemsHeld(500) is smaller than the buffer 800"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := resolve(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.buffer != tt.wantBuffer || s.held != tt.wantHeld {
				t.Errorf("buffer, held = %d, %d; want %d, %d", s.buffer, s.held, tt.wantBuffer, tt.wantHeld)
			}
		})
	}
}

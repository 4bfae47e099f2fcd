package async

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// startLog records the order in which its calls start; the call with value
// blockerValue waits for its gate first, so that the others queue.
type startLog struct{ Name string }

const blockerValue = 100

var starts = struct {
	sync.Mutex
	order map[string][]int
}{order: map[string][]int{}}

func (f *startLog) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	starts.Lock()
	starts.order[f.Name] = append(starts.order[f.Name], v)
	starts.Unlock()
	if v == blockerValue {
		select {
		case <-book.gate(gateID(f.Name, key, v)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	emit(fmt.Sprint(v))
	return nil
}

// tens is a priority function: 35 outranks 12, and 11 and 12 are equals.
func tens(v int) int { return v / 10 }

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&startLog{})
	register.Function1x1(tens)
}

// TestPriorityStartOrder fills the only slot with a blocked call, accepts
// elements of mixed priority, and unblocks: they must start highest priority
// first, equals in arrival order, whether they waited for the slot (buffer
// with room), or in bag state for want of buffer room (buffer full: the
// key's callbacks start them), or in a bounded key's drain.
func TestPriorityStartOrder(t *testing.T) {
	input := []int{11, 35, 12, 31, 5, 20}
	want := []int{blockerValue, 35, 31, 20, 11, 12, 5}
	tests := []struct {
		name   string
		buffer int
		bundle bool
	}{
		{"waiting for a slot", 10, false},
		{"queued in bag state under a full buffer", 1, false},
		{"bounded input under a full buffer", 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := testName(t)
			h := newHarness(t, &startLog{Name: name}, reflect.TypeOf(""), WithPriority(tens), WithParallelism(1), WithMaxItemsToBuffer(tc.buffer))
			var outputs []string
			if tc.bundle {
				outputs = priorityBundle(t, h, name, input)
			} else {
				outputs = priorityStream(t, h, name, input)
			}
			starts.Lock()
			got := starts.order[name]
			starts.Unlock()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("start order = %v, want %v", got, want)
			}
			if len(outputs) != len(want) {
				t.Errorf("%d outputs, want %d: %v", len(outputs), len(want), outputs)
			}
		})
	}
}

// priorityStream runs the blocker, then input, on unbounded input.
func priorityStream(t *testing.T, h *harness, name string, input []int) []string {
	f := h.stream()
	h.process(f, "k", blockerValue)
	waitStarts(t, name, 1)
	for _, v := range input {
		h.process(f, "k", v)
	}
	book.open(gateID(name, "k", blockerValue))
	var outputs []string
	for round := 0; len(outputs) < len(input)+1 && round < 20; round++ {
		h.waitKey("k")
		out, err := h.fire(f, "k")
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, out...)
	}
	return outputs
}

// priorityBundle runs the blocker, then input, in one bundle of bounded
// input.
func priorityBundle(t *testing.T, h *harness, name string, input []int) []string {
	f := h.bundleFn()
	var outputs []string
	emit := func(_ beam.EventTime, z beam.Z) { outputs = append(outputs, z.(string)) }
	ctx := context.Background()
	f.StartBundle(ctx, emit, nil)
	if err := f.ProcessElement(ctx, 0, "k", blockerValue, emit, nil); err != nil {
		t.Fatal(err)
	}
	waitStarts(t, name, 1)
	for _, v := range input {
		if err := f.ProcessElement(ctx, 0, "k", v, emit, nil); err != nil {
			t.Fatal(err)
		}
	}
	book.open(gateID(name, "k", blockerValue))
	if err := f.FinishBundle(ctx, emit, nil); err != nil {
		t.Fatal(err)
	}
	return outputs
}

func waitStarts(t *testing.T, name string, n int) {
	t.Helper()
	for i := 0; i < 5000; i++ {
		starts.Lock()
		got := len(starts.order[name])
		starts.Unlock()
		if got >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s: fewer than %d calls started", name, n)
}

// TestPriorityFunctionPanicFailsTheElement: a panicking priority function is
// a bad-input error for the bundle, with the cause, not a crash.
func TestPriorityFunctionPanicFailsTheElement(t *testing.T) {
	h := newHarness(t, &startLog{Name: testName(t)}, reflect.TypeOf(""), WithPriority(explodingPriority))
	f := h.stream()
	f.StartBundle(context.Background(), nil, nil, nil)
	err := f.ProcessElement(context.Background(), 0, h.st("k"), h.tm("k"), "k", 1, h.emitter("k"), h.fail, nil)
	if err == nil || !strings.Contains(err.Error(), "priority function") {
		t.Errorf("accept with a panicking priority function = %v, want an error naming it", err)
	}
}

func explodingPriority(v int) int { panic(fmt.Sprint("no priority for ", v)) }

func init() { register.Function1x1(explodingPriority) }

package async

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// WithPriority sets a function from an element's value to its priority, a
// top-level function func(V) int. When elements wait to start, higher
// priorities start first and equal priorities keep their arrival order
// (TaskFlow's atom priority). It orders:
//   - admitted elements waiting in the worker for a place in flight (see
//     WithMaxItemsToBuffer) or for a parallelism slot, across all keys,
//     bundles and DoFn instances of the transform in the worker process (an
//     element already in flight keeps its place, so at most buffer minus
//     parallelism elements can start before a later, higher one);
//   - the elements a key's callback starts from bag state (left there for
//     want of room, restarted after a worker restart, retries that are due),
//     and the elements a bounded key's drain starts.
//
// Elements left in bag state for want of room (WithMaxItemsHeld) are started
// by their own key's callback, so across keys they start as those callbacks
// fire, not by priority. With WithOrdered, a key's callback starts its
// elements in acceptance order instead. Default: all priorities 0, first
// come first served.
func WithPriority(fn any) Option {
	return func(s *settings) { s.priorityFn = fn }
}

// inspectPriority checks a priority function against the value type.
func inspectPriority(fn any, valT reflect.Type) (*beam.EncodedFunc, error) {
	if fn == nil {
		return nil, nil
	}
	ft := reflect.TypeOf(fn)
	if ft.Kind() != reflect.Func || ft.NumIn() != 1 || ft.NumOut() != 1 || !valT.AssignableTo(ft.In(0)) || ft.Out(0) != reflect.TypeOf(0) {
		return nil, fmt.Errorf("WithPriority: fn has type %v; want func(%v) int", ft, valT)
	}
	return encodeFunc("WithPriority", fn)
}

// priority returns value's priority, 0 without a priority function.
func (f *core) priority(value any) (p int, err error) {
	if f.PriorityFn == nil {
		return 0, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("async: the priority function %s panicked on value %v: %v", f.PriorityFn.Fn.Name(), value, r)
		}
	}()
	return f.PriorityFn.Fn.Call([]any{value})[0].(int), nil
}

// byPriority orders elements about to be started (a callback's or a
// drain's): highest priority first, equal priorities in their current order.
func byPriority[T any](items []T, priority func(T) int) {
	sort.SliceStable(items, func(i, j int) bool { return priority(items[i]) > priority(items[j]) })
}

package worker

// An element's priority on the pool's queue.

import (
	"sort"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// Priority returns value's priority, 0 without a priority function.
func (f *Core) Priority(value any) (int, error) {
	if f.PriorityFn == nil {
		return 0, nil
	}
	return terms.CallValueFn[int](f.PriorityFn, "priority", value)
}

// ByPriority orders elements about to be started by a callback: highest
// priority first, equal priorities in their current order.
func ByPriority[T any](items []T, priority func(T) int) {
	sort.SliceStable(items, func(i, j int) bool { return priority(items[i]) > priority(items[j]) })
}

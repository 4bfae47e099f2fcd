package terms

// Calling a function of the element's value that ParDo checked (WithIDFn,
// WithPriority).

import (
	"fmt"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// CallValueFn calls a function checked by inspectValueFn; what names it in
// the error a panic becomes.
func CallValueFn[T any](fn *wrapped.Shipped, what string, value any) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("async: the %s function %s panicked on value %v: %v", what, fn.Func().Name(), value, r)
		}
	}()
	return fn.Func().Call([]any{value})[0].(T), nil
}

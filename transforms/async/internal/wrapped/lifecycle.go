package wrapped

// The optional methods of a wrapped DoFn struct: the lifecycle methods
// forwarded to it, and the checks, at construction, of their signatures and
// of the compensation method's (Revert).

import (
	"fmt"
	"reflect"
)

// lifecycle lists the optional methods forwarded to the wrapped DoFn.
var lifecycle = []string{"Setup", "StartBundle", "FinishBundle", "Teardown"}

// checkLifecycle checks an optional method; emitT is ProcessElement's
// emitter, which StartBundle and FinishBundle may take too (nil: none).
func checkLifecycle(name string, ft reflect.Type, emitT reflect.Type) error {
	want := name + "([ctx context.Context]) [error]"
	if (name == "StartBundle" || name == "FinishBundle") && emitT != nil {
		want = fmt.Sprintf("%s([ctx context.Context,] [emit %v]) [error]", name, emitT)
	}
	i := 0
	if i < ft.NumIn() && ft.In(i) == contextType {
		i++
	}
	if i < ft.NumIn() && emitT != nil && ft.In(i) == emitT && (name == "StartBundle" || name == "FinishBundle") {
		i++
	}
	if i != ft.NumIn() || checkReturnsOnlyError(ft) != nil {
		return fmt.Errorf("%s has signature %v; want %s", name, ft, want)
	}
	return nil
}

func checkReturnsOnlyError(ft reflect.Type) error {
	switch {
	case ft.NumOut() == 0:
		return nil
	case ft.NumOut() == 1 && ft.Out(0) == errorType:
		return nil
	}
	return fmt.Errorf("it returns %d values; want nothing or a single error", ft.NumOut())
}

// revertShape is quoted by errors about the compensation method.
const revertShape = "Revert([ctx context.Context,] key K, value V, err error) [error]"

// checkRevert checks the optional compensation method of a DoFn struct.
func checkRevert(ft reflect.Type, keyT, valT reflect.Type) error {
	in := paramsAfterContext(ft)
	if len(in) != 3 || !keyT.AssignableTo(in[0]) || !valT.AssignableTo(in[1]) || in[2] != errorType || checkReturnsOnlyError(ft) != nil {
		return fmt.Errorf("Revert has signature %v; want %s with K=%v, V=%v", ft, revertShape, keyT, valT)
	}
	return nil
}

package wrapped

// Reflection helpers that construction and the worker share: the context
// and error types, a func type's parameters, a method's type without its
// receiver, and the values a call passes and returns.

import (
	"context"
	"reflect"
)

var (
	contextType = reflect.TypeOf((*context.Context)(nil)).Elem()
	errorType   = reflect.TypeOf((*error)(nil)).Elem()
	errorsType  = reflect.TypeOf([]error(nil))
)

// params are ft's parameter types.
func params(ft reflect.Type) []reflect.Type {
	in := make([]reflect.Type, ft.NumIn())
	for i := range in {
		in[i] = ft.In(i)
	}
	return in
}

// paramsAfterContext returns the parameter types of a func type, without
// a leading context.Context.
func paramsAfterContext(ft reflect.Type) []reflect.Type {
	in := make([]reflect.Type, 0, ft.NumIn())
	for i := 0; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	if len(in) > 0 && in[0] == contextType {
		in = in[1:]
	}
	return in
}

// methodType drops the receiver from a method's func type.
func methodType(m reflect.Method) reflect.Type {
	ft := m.Type
	in := make([]reflect.Type, 0, ft.NumIn()-1)
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	out := make([]reflect.Type, 0, ft.NumOut())
	for i := 0; i < ft.NumOut(); i++ {
		out = append(out, ft.Out(i))
	}
	return reflect.FuncOf(in, out, false)
}

// valueOf converts an element to the parameter type, mapping a nil interface
// to the parameter's zero value.
func valueOf(x any, t reflect.Type) reflect.Value {
	if x == nil {
		return reflect.Zero(t)
	}
	return reflect.ValueOf(x)
}

// interfaces returns the values of vs as interfaces.
func interfaces(vs []reflect.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v.Interface()
	}
	return out
}

func resultError(out []reflect.Value) error {
	if len(out) == 0 || out[0].IsNil() {
		return nil
	}
	return out[0].Interface().(error)
}

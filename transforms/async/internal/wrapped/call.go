package wrapped

// One element's call of the wrapped fn on a worker (Fn.Call): its arguments,
// taken from the element as ProcShape places them, and its outputs, emitted
// or returned.

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
)

// CallInput is one element as a call of the wrapped fn receives it.
type CallInput struct {
	Key, Value any
	TS         beam.EventTime
	Window     string // windowText of the element's window
}

// Call runs StartBundle, ProcessElement and FinishBundle for one element and
// returns everything they emitted or ProcessElement returned.
func (u *Fn) Call(ctx context.Context, in CallInput) ([]any, error) {
	out := &callOutputs{pairs: newPairEncoder(u.pairs)}
	var emit reflect.Value
	if u.Shape.emitT != nil {
		emit = reflect.MakeFunc(u.Shape.emitT, out.emit)
	}
	if err := u.lifecycle(ctx, "StartBundle", &emit); err != nil {
		return nil, err
	}
	args, err := u.Shape.args(u.procT, ctx, in, emit)
	if err != nil {
		return nil, err
	}
	res := u.invoke(args)
	if u.Shape.returnsError {
		if err, _ := res[len(res)-1].(error); err != nil {
			return nil, err
		}
	}
	if u.Shape.returned > 0 {
		out.add(res[:u.Shape.returned]...)
	}
	if err := u.lifecycle(ctx, "FinishBundle", &emit); err != nil {
		return nil, err
	}
	if out.err != nil {
		return nil, PermanentOf(out.err) // the same outputs would fail again
	}
	return out.list, nil
}

// args are the arguments of one call, emit being the call's emitter (not
// valid when the fn returns its outputs).
func (s ProcShape) args(ft reflect.Type, ctx context.Context, in CallInput, emit reflect.Value) ([]reflect.Value, error) {
	args := make([]reflect.Value, len(s.params))
	for i, p := range s.params {
		switch p {
		case paramContext:
			args[i] = reflect.ValueOf(&ctx).Elem()
		case ParamWindow:
			w, err := parseWindowText(in.Window)
			if err != nil {
				return nil, err
			}
			args[i] = reflect.ValueOf(&w).Elem()
		case ParamTime:
			args[i] = reflect.ValueOf(in.TS)
		case paramKey:
			args[i] = valueOf(in.Key, ft.In(i))
		case paramValue:
			args[i] = valueOf(in.Value, ft.In(i))
		case paramEmit:
			args[i] = emit
		}
	}
	return args, nil
}

// parseWindowText is windowText reversed, for a fn that takes its element's
// window.
func parseWindowText(w string) (typex.Window, error) {
	if w == "" {
		return window.GlobalWindow{}, nil
	}
	if start, end, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(w, "["), ")"), ", "); ok {
		s, err1 := strconv.ParseInt(start, 10, 64)
		e, err2 := strconv.ParseInt(end, 10, 64)
		if err1 == nil && err2 == nil {
			return window.IntervalWindow{Start: mtime.Time(s), End: mtime.Time(e)}, nil
		}
	}
	return nil, fmt.Errorf("async: the element's window %q is not one the transform writes", w)
}

// callOutputs gathers one call's outputs: emitted (as Beam's emitters, not
// safe for concurrent use) or returned.
type callOutputs struct {
	pairs *PairEncoder // nil: the outputs are values of one type
	list  []any
	err   error // the first output that could not be encoded
}

// emit is the emitter's body: func(O) or func(K2, V2).
func (c *callOutputs) emit(args []reflect.Value) []reflect.Value {
	c.add(interfaces(args)...)
	return nil
}

// add adds one output: a value, or a key and a value.
func (c *callOutputs) add(o ...any) {
	if c.pairs == nil {
		c.list = append(c.list, o[0])
		return
	}
	p, err := c.pairs.pair(o[0], o[1])
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		return
	}
	c.list = append(c.list, p)
}

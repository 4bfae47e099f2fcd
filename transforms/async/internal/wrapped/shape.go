package wrapped

// The shapes a wrapped ProcessElement may have, as beam.ParDo takes them
// over KV input: an optional context, the element's window and event time,
// the key and the value, then either one emitter (func(O) or func(K2, V2))
// or returned outputs (O, or K2 and V2), with an optional error last.
//
// Key-value outputs travel through the transform as pairs of encoded bytes
// (pairs.go).

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
)

// expectedShape is quoted by every error about the wrapped fn's signature.
const expectedShape = "ProcessElement([ctx context.Context,] [w beam.Window,] [t beam.EventTime,] key K, value V, emit func(O) | emit func(K2, V2)) [error], " +
	"or the same without emit returning O, (O, error), (K2, V2) or (K2, V2, error)"

var (
	windowType    = reflect.TypeOf((*typex.Window)(nil)).Elem()
	eventTimeType = reflect.TypeOf(typex.EventTime(0))
	paneType      = reflect.TypeOf(typex.PaneInfo{})
)

// paramKind is what one parameter of the wrapped ProcessElement receives.
type paramKind uint8

const (
	paramContext paramKind = iota
	ParamWindow
	ParamTime
	paramKey
	paramValue
	paramEmit
)

// ProcShape is where a wrapped ProcessElement takes its arguments and gives
// its outputs.
type ProcShape struct {
	params []paramKind
	// emitT is the emitter's type; nil when the outputs are returned.
	emitT reflect.Type
	// returned is how many outputs a call returns (0 with an emitter, 1
	// for O, 2 for a key and a value); returnsError: an error comes last.
	returned     int
	returnsError bool
	out          outputShape
}

// outputShape is what the wrapped fn outputs: values of one type, or
// key-value pairs.
type outputShape struct {
	value reflect.Type // O, or V2 of pairs
	key   reflect.Type // K2 of pairs; nil for values of one type
}

// pairs reports whether the outputs are key-value pairs.
func (o outputShape) pairs() bool { return o.key != nil }

// analyzeProcess reads a ProcessElement's type (without receiver). With
// keyT and valT not nil, it checks the key and value parameters against
// them; a worker, which rebuilds a fn checked at construction, passes nil.
func analyzeProcess(ft reflect.Type, keyT, valT reflect.Type, what string) (ProcShape, error) {
	bad := func(format string, args ...any) (ProcShape, error) {
		return ProcShape{}, fmt.Errorf("%s has signature %v: %s; want %s with K=%v, V=%v", what, ft, fmt.Sprintf(format, args...), expectedShape, keyT, valT)
	}
	var s ProcShape
	i := 0
	if i < ft.NumIn() && ft.In(i) == contextType {
		s.params, i = append(s.params, paramContext), i+1
	}
params:
	for ; i < ft.NumIn(); i++ {
		switch t := ft.In(i); {
		case t == windowType && !s.Takes(ParamWindow):
			s.params = append(s.params, ParamWindow)
		case t == eventTimeType && !s.Takes(ParamTime):
			s.params = append(s.params, ParamTime)
		case t == paneType:
			return bad("it takes a beam.PaneInfo, which the transform cannot give (its outputs are not in their element's pane)")
		default:
			break params
		}
	}
	rest := ft.NumIn() - i
	if rest < 2 {
		return bad("it takes %d parameters after the context, window and event time, want the key and the value (and an emitter unless it returns its outputs)", rest)
	}
	if keyT != nil && !keyT.AssignableTo(ft.In(i)) {
		return bad("the key parameter is %v but the input's keys are %v", ft.In(i), keyT)
	}
	if valT != nil && !valT.AssignableTo(ft.In(i+1)) {
		return bad("the value parameter is %v but the input's values are %v", ft.In(i+1), valT)
	}
	s.params = append(s.params, paramKey, paramValue)
	switch rest {
	case 2:
	case 3:
		emitT := ft.In(i + 2)
		out, err := emitterShape(emitT)
		if err != nil {
			return bad("%v", err)
		}
		s.params, s.emitT, s.out = append(s.params, paramEmit), emitT, out
	default:
		if allEmitters(ft, i+2) {
			return bad("it has %d emitters; the transform has one output: emit one type that holds each kind (a struct or an interface) and split it with beam.ParDo after the transform", rest-2)
		}
		return bad("it takes %d parameters after the key and the value, want one emitter or none (side inputs are not supported: look them up in Setup, or join them after the transform)", rest-2)
	}
	return s.results(ft, bad)
}

// results reads what a ProcessElement returns.
func (s ProcShape) results(ft reflect.Type, bad func(string, ...any) (ProcShape, error)) (ProcShape, error) {
	n := ft.NumOut()
	if n > 0 && ft.Out(n-1) == errorType {
		s.returnsError, n = true, n-1
	}
	switch {
	case s.emitT != nil && n > 0:
		return bad("it has an emitter and returns %d values besides an error; want an emitter or returned outputs, not both", n)
	case s.emitT != nil:
	case n == 0:
		return bad("it has no output: give it an emitter, or return the output")
	case n == 1:
		s.returned, s.out = 1, outputShape{value: ft.Out(0)}
	case n == 2:
		if ft.Out(0) == eventTimeType {
			return bad("it returns an event time: the transform gives each output its element's event time")
		}
		s.returned, s.out = 2, outputShape{key: ft.Out(0), value: ft.Out(1)}
	default:
		return bad("it returns %d values besides an error; want O or K2, V2", n)
	}
	return s, nil
}

// Takes reports whether the fn takes a parameter of kind k.
func (s ProcShape) Takes(k paramKind) bool {
	for _, p := range s.params {
		if p == k {
			return true
		}
	}
	return false
}

// emitterShape reads an emitter: func(O) or func(K2, V2).
func emitterShape(t reflect.Type) (outputShape, error) {
	if t.Kind() != reflect.Func || t.NumOut() != 0 || t.IsVariadic() || t.NumIn() < 1 || t.NumIn() > 2 {
		return outputShape{}, fmt.Errorf("the last parameter %v is not an emitter func(O) or func(K2, V2)", t)
	}
	if t.In(0) == eventTimeType {
		return outputShape{}, fmt.Errorf("the emitter %v takes an event time: the transform gives each output its element's event time, so drop it", t)
	}
	if t.NumIn() == 1 {
		return outputShape{value: t.In(0)}, nil
	}
	return outputShape{key: t.In(0), value: t.In(1)}, nil
}

// allEmitters reports whether every parameter of ft from i on is a func.
func allEmitters(ft reflect.Type, i int) bool {
	for ; i < ft.NumIn(); i++ {
		if ft.In(i).Kind() != reflect.Func {
			return false
		}
	}
	return true
}

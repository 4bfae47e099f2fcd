package wrapped

// The shapes a wrapped ProcessElement may have, as beam.ParDo takes them
// over KV input: an optional context, the element's window and event time,
// the key and the value, then either one emitter (func(O) or func(K2, V2))
// or returned outputs (O, or K2 and V2), with an optional error last.
//
// Key-value outputs travel through the transform as pairs of encoded bytes
// (the front's pair type, one concrete type for every K2 and V2) and become a
// PCollection<KV<K2, V2>> in a last step (the front's).

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

// CallInput is one element as a call of the wrapped fn receives it.
type CallInput struct {
	Key, Value any
	TS         beam.EventTime
	Window     string // windowText of the element's window
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

// pairType is the type of a pair output and newPair makes one from its key
// and value, each encoded with its coder: the front's (SetPairOutput). Beam
// names the step that splits pairs, and the result cache its keys, after
// that type, so it stays with the front whatever the code's layout.
var (
	pairType reflect.Type
	newPair  func(key, value []byte) any
)

// SetPairOutput sets the type of pair outputs and how one is made. The
// front calls it in its init, before any fn is inspected or called.
func SetPairOutput(t reflect.Type, make func(key, value []byte) any) {
	pairType, newPair = t, make
}

// PairTypes are K2 and V2 of a fn whose outputs are key-value pairs, as the
// spec carries them to workers.
type PairTypes struct {
	Key, Value beam.EncodedType
}

// PairEncoder makes the pair outputs of one call. Encoders are made per
// call: calls run concurrently.
type PairEncoder struct {
	key, value beam.ElementEncoder
}

func newPairEncoder(p *PairTypes) *PairEncoder {
	if p == nil {
		return nil
	}
	return &PairEncoder{key: beam.NewElementEncoder(p.Key.T), value: beam.NewElementEncoder(p.Value.T)}
}

// pair encodes one output pair.
func (e *PairEncoder) pair(k, v any) (any, error) {
	kb, err := Encode(e.key, k)
	if err != nil {
		return nil, fmt.Errorf("async: encoding an output key %v: %w", k, err)
	}
	vb, err := Encode(e.value, v)
	if err != nil {
		return nil, fmt.Errorf("async: encoding an output value %v: %w", v, err)
	}
	return newPair(kb, vb), nil
}

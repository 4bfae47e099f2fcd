package wrapped

// The wrapped batch fn of BatchParDo: checking its shape at construction and
// calling its ProcessBatch on a worker, with a panic turned into an error.

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync"

	"github.com/asyncbeam/asyncbeam/state"
)

// expectedBatchShape is quoted by every error about a batch fn's signature.
const expectedBatchShape = "ProcessBatch([ctx context.Context,] keys []K, values []V, emit func(i int, out O) | emit func(i int, k K2, v V2)) [error | ([]error, error)]"

var errorsType = reflect.TypeOf([]error(nil))

// InspectBatch is Inspect for BatchParDo's fn.
func InspectBatch(fn any, keyT, valT reflect.Type) (Spec, reflect.Type, error) {
	return inspectForm(fn, fnForm{
		accepts:     "a pointer to a registered struct with a method " + expectedBatchShape + ", or a registered function of that form",
		what:        "batch fn",
		checkFunc:   func(ft reflect.Type) (outputShape, error) { return checkBatch(ft, keyT, valT, "fn") },
		checkStruct: func(pt reflect.Type) (outputShape, error) { return checkBatchStruct(pt, keyT, valT) },
		batch:       true,
	})
}

// checkBatchStruct checks a batch DoFn struct: ProcessBatch, Setup and
// Teardown, Revert; not StartBundle or FinishBundle (a request has no
// bundle of its own to start or finish).
func checkBatchStruct(pt reflect.Type, keyT, valT reflect.Type) (outputShape, error) {
	m, ok := pt.MethodByName("ProcessBatch")
	if !ok {
		if _, ok := pt.MethodByName("ProcessElement"); ok {
			return outputShape{}, fmt.Errorf("fn %v has ProcessElement but no ProcessBatch: use async.ParDo for it, or give it %s", pt, expectedBatchShape)
		}
		return outputShape{}, fmt.Errorf("fn %v has no ProcessBatch method; want %s", pt, expectedBatchShape)
	}
	out, err := checkBatch(methodType(m), keyT, valT, fmt.Sprintf("%v.ProcessBatch", pt))
	if err != nil {
		return outputShape{}, err
	}
	for _, name := range []string{"StartBundle", "FinishBundle"} {
		if _, ok := pt.MethodByName(name); ok {
			return outputShape{}, fmt.Errorf("fn %v has %s: a batch fn may have Setup and Teardown, not bundle methods (a request is not a bundle); move its work to Setup or ProcessBatch", pt, name)
		}
	}
	for _, name := range []string{"Setup", "Teardown"} {
		if m, ok := pt.MethodByName(name); ok {
			if err := checkLifecycle(name, methodType(m), nil); err != nil {
				return outputShape{}, fmt.Errorf("fn %v: %w", pt, err)
			}
		}
	}
	if m, ok := pt.MethodByName("Revert"); ok {
		if err := checkRevert(methodType(m), keyT, valT); err != nil {
			return outputShape{}, fmt.Errorf("fn %v: %w", pt, err)
		}
	}
	return out, nil
}

// checkBatch checks a ProcessBatch signature (without receiver) and returns
// what it outputs.
func checkBatch(ft reflect.Type, keyT, valT reflect.Type, what string) (outputShape, error) {
	bad := func(format string, args ...any) (outputShape, error) {
		return outputShape{}, fmt.Errorf("%s has signature %v: %s; want %s with K=%v, V=%v", what, ft, fmt.Sprintf(format, args...), expectedBatchShape, keyT, valT)
	}
	if ft.Kind() != reflect.Func {
		return bad("it is not a function")
	}
	in := paramsAfterContext(ft)
	if len(in) != 3 {
		return bad("it takes %d parameters after the optional context, want 3", len(in))
	}
	if in[0].Kind() != reflect.Slice || !keyT.AssignableTo(in[0].Elem()) {
		return bad("the keys parameter is %v but the input's keys are %v", in[0], keyT)
	}
	if in[1].Kind() != reflect.Slice || !valT.AssignableTo(in[1].Elem()) {
		return bad("the values parameter is %v but the input's values are %v", in[1], valT)
	}
	e := in[2]
	if e.Kind() != reflect.Func || e.NumIn() < 2 || e.NumIn() > 3 || e.NumOut() != 0 || e.IsVariadic() || e.In(0).Kind() != reflect.Int {
		return bad("the last parameter %v is not an emitter func(i int, out O) or func(i int, k K2, v V2)", e)
	}
	switch {
	case ft.NumOut() == 0, ft.NumOut() == 1 && ft.Out(0) == errorType,
		ft.NumOut() == 2 && ft.Out(0) == errorsType && ft.Out(1) == errorType:
	default:
		return bad("it returns %d values; want nothing, an error, or ([]error, error)", ft.NumOut())
	}
	if e.NumIn() == 3 {
		return outputShape{key: e.In(1), value: e.In(2)}, nil
	}
	return outputShape{value: e.In(1)}, nil
}

// batchCall is a batch fn's ProcessBatch, bound on a worker.
type batchCall struct {
	ft   reflect.Type // without receiver
	call func(args []reflect.Value) []any
}

// newBatchCall binds spec's ProcessBatch (BatchEnrich: LookupBatch): the
// method of ptr, or spec's function when ptr is not valid.
func newBatchCall(spec Spec, ptr reflect.Value) batchCall {
	if !ptr.IsValid() {
		fn := spec.Func.fn
		return batchCall{ft: fn.Type(), call: func(args []reflect.Value) []any {
			in := make([]any, len(args))
			for i, a := range args {
				in[i] = a.Interface()
			}
			return fn.Call(in)
		}}
	}
	m := ptr.MethodByName(spec.BatchMethod())
	return batchCall{ft: m.Type(), call: func(args []reflect.Value) []any {
		res := m.Call(args)
		out := make([]any, len(res))
		for i, r := range res {
			out[i] = r.Interface()
		}
		return out
	}}
}

// CallBatch calls ProcessBatch (BatchEnrich: LookupBatch, with the keys
// only) once for keys and values and returns each
// element's outputs and error, or the request's error: what ProcessBatch
// returned as its error, a panic, or an answer that does not fit (a list of
// errors of another length, an output for an element it was not given).
func (u *Fn) CallBatch(ctx context.Context, keys, values []any) (outs [][]any, errs []error, err error) {
	defer func() {
		if r := recover(); r != nil {
			outs, errs, err = nil, nil, &state.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	if u.lookupBatch {
		return u.callLookupBatch(ctx, keys)
	}
	ft := u.batch.ft
	n := len(keys)
	args := make([]reflect.Value, 0, 4)
	if ft.In(0) == contextType {
		args = append(args, reflect.ValueOf(ctx))
	}
	kt, vt := ft.In(len(args)), ft.In(len(args)+1)
	ks, vs := reflect.MakeSlice(kt, n, n), reflect.MakeSlice(vt, n, n)
	for i := range keys {
		ks.Index(i).Set(valueOf(keys[i], kt.Elem()))
		vs.Index(i).Set(valueOf(values[i], vt.Elem()))
	}
	got := &BatchOutputs{outs: make([][]any, n), pairs: newPairEncoder(u.pairs)}
	args = append(args, ks, vs, reflect.MakeFunc(ft.In(len(args)+2), got.Emit))
	defer got.Close() // also after a panic
	res := u.batch.call(args)
	switch len(res) {
	case 1:
		err, _ = res[0].(error)
	case 2:
		errs, _ = res[0].([]error)
		err, _ = res[1].(error)
	}
	got.Close()
	return got.Answer(errs, err)
}

// BatchOutputs gathers what one ProcessBatch call emits, from any goroutine
// of its own, until the call returns (close): an emit after that is
// dropped, and so is one for an element the request does not have, which
// fails the request (stray).
type BatchOutputs struct {
	mu       sync.Mutex
	outs     [][]any
	pairs    *PairEncoder // nil: the outputs are values of one type
	stray    error
	unfit    map[int]error // elements with an output pair that cannot be encoded
	returned bool
}

// Emit is the emitter ProcessBatch gets: func(i int, out O) or func(i int,
// k K2, v V2).
func (b *BatchOutputs) Emit(a []reflect.Value) []reflect.Value {
	i := int(a[0].Int())
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.returned {
		return nil
	}
	if i < 0 || i >= len(b.outs) {
		if b.stray == nil {
			b.stray = fmt.Errorf("ProcessBatch emitted for element %d of a request of %d", i, len(b.outs))
		}
		return nil
	}
	if b.pairs == nil {
		b.outs[i] = append(b.outs[i], a[1].Interface())
		return nil
	}
	p, err := b.pairs.pair(a[1].Interface(), a[2].Interface())
	if err != nil {
		// That element's fault, not the request's: it fails alone, for
		// good (a retry would emit the same pair).
		if b.unfit == nil {
			b.unfit = map[int]error{}
		}
		if b.unfit[i] == nil {
			b.unfit[i] = PermanentOf(err)
		}
		return nil
	}
	b.outs[i] = append(b.outs[i], p)
	return nil
}

func (b *BatchOutputs) Close() {
	b.mu.Lock()
	b.returned = true
	b.mu.Unlock()
}

// Answer is the call's result once it returned errs and err (closed: no
// emit changes the outputs any more).
func (b *BatchOutputs) Answer(errs []error, err error) ([][]any, []error, error) {
	n := len(b.outs)
	switch {
	case err != nil:
		return nil, nil, err
	case b.stray != nil:
		return nil, nil, b.stray
	case errs != nil && len(errs) != n:
		return nil, nil, fmt.Errorf("ProcessBatch returned %d errors for a request of %d elements; want one per element (nil for a success), or a nil list", len(errs), n)
	}
	errs = append(make([]error, 0, n), errs...) // ours to change, not the fn's list
	errs = errs[:n]
	for i, e := range b.unfit {
		if errs[i] == nil {
			errs[i] = e
		}
	}
	for i, e := range errs {
		if e != nil {
			b.outs[i] = nil // a failed element's outputs are not its result
		}
	}
	return b.outs, errs, nil
}

package wrapped

// One request of a batch fn on a worker (Fn.CallBatch): a call of
// BatchParDo's ProcessBatch, or of BatchEnrich's LookupBatch, with a panic
// turned into an error, and the outputs it emits gathered per element.

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/asyncbeam/asyncbeam/state"
)

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

// callLookupBatch calls a batch lookup once for keys and returns each
// key's answer (as its one output) and error, or the request's error; ft
// is the lookup's type (without receiver). A list of answers or errors of
// another length than keys fails the request.
func (u *Fn) callLookupBatch(ctx context.Context, keys []any) (outs [][]any, errs []error, err error) {
	ft := u.batch.ft
	n := len(keys)
	args := make([]reflect.Value, 0, 2)
	if ft.In(0) == contextType {
		args = append(args, reflect.ValueOf(ctx))
	}
	kt := ft.In(len(args))
	ks := reflect.MakeSlice(kt, n, n)
	for i := range keys {
		ks.Index(i).Set(valueOf(keys[i], kt.Elem()))
	}
	res := u.batch.call(append(args, ks))
	switch len(res) {
	case 2:
		err, _ = res[1].(error)
	case 3:
		errs, _ = res[1].([]error)
		err, _ = res[2].(error)
	}
	if err != nil {
		return nil, nil, err
	}
	answers := reflect.ValueOf(res[0])
	switch {
	case answers.Len() == 0 && n > 0 && len(errs) == n && !slices.Contains(errs, nil):
		return make([][]any, n), errs, nil // every key failed: no answers needed
	case answers.Len() != n:
		return nil, nil, fmt.Errorf("%s returned %d answers; want %d, one per key, in the keys' order", u.Name, answers.Len(), n)
	case errs != nil && len(errs) != n:
		return nil, nil, fmt.Errorf("%s returned %d errors; want %d, one per key (nil for a success), or a nil list", u.Name, len(errs), n)
	}
	if errs == nil {
		errs = make([]error, n)
	}
	outs = make([][]any, n)
	for i := range outs {
		if errs[i] == nil {
			outs[i] = []any{answers.Index(i).Interface()}
		}
	}
	return outs, errs, nil
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

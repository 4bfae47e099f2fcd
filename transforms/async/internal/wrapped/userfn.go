package wrapped

// The wrapped fn on a worker: rebuilt from its Spec (userspec.go), with its
// bundle and lifecycle methods forwarded and its compensation (Revert)
// called, panics turned into errors. Its calls are in call.go (one element)
// and callbatch.go (one request of a batch fn).

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
)

// Fn is the wrapped fn on a worker. Its ProcessElement (with StartBundle
// before and FinishBundle after, per element) runs concurrently on the pool's
// goroutines. Teardown waits for the last running call: see close.
type Fn struct {
	Name string
	// invoke calls ProcessElement and returns its results.
	invoke  func(args []reflect.Value) []any
	procT   reflect.Type // ProcessElement's type, without receiver
	Shape   ProcShape
	pairs   *PairTypes               // the outputs' types when they are pairs
	methods map[string]reflect.Value // present lifecycle methods
	revertM reflect.Value            // the compensation method, if any
	batch   batchCall                // a batch fn's ProcessBatch (spec.Batch)
	// lookupBatch: batch is BatchEnrich's LookupBatch, called with the
	// keys only.
	lookupBatch bool

	mu      sync.Mutex
	refs    int
	closing bool
}

// batchCall is a batch fn's ProcessBatch, bound on a worker.
type batchCall struct {
	ft   reflect.Type // without receiver
	call func(args []reflect.Value) []any
}

// Start rebuilds the wrapped fn on a worker and forwards its Setup:
// the first step of every DoFn of the transform that calls it.
func Start(ctx context.Context, spec Spec) (*Fn, error) {
	u, err := newUserFn(spec)
	if err != nil {
		return nil, err
	}
	if err := u.setup(ctx); err != nil {
		return nil, fmt.Errorf("async: %w", err)
	}
	return u, nil
}

func newUserFn(spec Spec) (*Fn, error) {
	switch {
	case spec.Func != nil:
		fn := spec.Func.fn
		invoke := func(args []reflect.Value) []any {
			in := make([]any, len(args))
			for i, a := range args {
				in[i] = a.Interface()
			}
			return fn.Call(in)
		}
		u := &Fn{Name: fn.Name(), invoke: invoke, procT: fn.Type(), pairs: spec.Pairs, methods: map[string]reflect.Value{}}
		if spec.Batch {
			u.batch, u.lookupBatch = newBatchCall(spec, reflect.Value{}), spec.Enrich != nil
			return u, nil
		}
		return u, u.analyze(spec)
	case spec.Type != nil:
		ptr := reflect.New(spec.Type.T)
		if spec.JSON != "" {
			if err := json.Unmarshal([]byte(spec.JSON), ptr.Interface()); err != nil {
				return nil, fmt.Errorf("async: rebuilding wrapped DoFn %v: %w", spec.Type.T, err)
			}
		}
		u := &Fn{Name: spec.Type.T.String(), pairs: spec.Pairs, methods: map[string]reflect.Value{}}
		for _, name := range lifecycle {
			if m := ptr.MethodByName(name); m.IsValid() {
				u.methods[name] = m
			}
		}
		u.revertM = ptr.MethodByName("Revert")
		if spec.Batch {
			u.batch, u.lookupBatch = newBatchCall(spec, ptr), spec.Enrich != nil
			u.procT = u.batch.ft
			return u, nil
		}
		m := ptr.MethodByName(spec.Method())
		if !m.IsValid() {
			return nil, fmt.Errorf("async: rebuilding wrapped fn %v: it has no %s method", spec.Type.T, spec.Method())
		}
		u.invoke = func(args []reflect.Value) []any { return interfaces(m.Call(args)) }
		u.procT = m.Type()
		return u, u.analyze(spec)
	}
	return nil, fmt.Errorf("async: the transform carries no wrapped fn")
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

// analyze reads the shape of ProcessElement (or Enrich's lookup), checked
// at construction.
func (u *Fn) analyze(spec Spec) (err error) {
	if spec.Enrich != nil {
		u.Shape, err = analyzeLookup(u.procT, nil, u.Name)
	} else {
		u.Shape, err = analyzeProcess(u.procT, nil, nil, u.Name+".ProcessElement")
	}
	if err != nil {
		return fmt.Errorf("async: rebuilding the wrapped fn: %w", err)
	}
	return nil
}

// setup forwards Setup.
func (u *Fn) setup(ctx context.Context) error { return u.lifecycle(ctx, "Setup", nil) }

// Acquire counts a call that is about to be started; it fails once the fn
// is closing. Every successful Acquire is matched by Release.
func (u *Fn) Acquire() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closing {
		return false
	}
	u.refs++
	return true
}

// Release ends an acquired call, and tears the fn down if it was the last one of
// a closing fn.
func (u *Fn) Release() {
	u.mu.Lock()
	u.refs--
	last := u.closing && u.refs == 0
	u.mu.Unlock()
	if last {
		u.teardown(context.Background())
	}
}

// Close forwards Teardown now if no call is running, or else after the last
// running call returns: calls started by this instance may outlive it, since
// the pool is shared and another instance may commit their results.
func (u *Fn) Close(ctx context.Context) error {
	u.mu.Lock()
	u.closing = true
	now := u.refs == 0
	u.mu.Unlock()
	if now {
		return u.lifecycle(ctx, "Teardown", nil)
	}
	return nil
}

func (u *Fn) teardown(ctx context.Context) {
	if err := u.lifecycle(ctx, "Teardown", nil); err != nil {
		log.Warnf(ctx, "async: Teardown of %s after its last call: %v", u.Name, err)
	}
}

// Revert calls the compensation method, if the fn has one, for an element
// that failed for good; a panic in it becomes an error.
func (u *Fn) Revert(ctx context.Context, key, value any, cause error) (err error) {
	if !u.revertM.IsValid() {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Revert panicked: %v\n%s", r, debug.Stack())
		}
	}()
	args := keyValueArgs(u.revertM.Type(), ctx, key, value, reflect.ValueOf(&cause).Elem())
	if err := resultError(u.revertM.Call(args)); err != nil {
		return fmt.Errorf("Revert: %w", err)
	}
	return nil
}

// keyValueArgs are the arguments of a method of shape
// ([ctx,] key, value, last): ProcessElement (last: emit) and Revert (last:
// the error).
func keyValueArgs(ft reflect.Type, ctx context.Context, key, value any, last reflect.Value) []reflect.Value {
	args := make([]reflect.Value, 0, 4)
	if ft.In(0) == contextType {
		args = append(args, reflect.ValueOf(ctx))
	}
	return append(args, valueOf(key, ft.In(len(args))), valueOf(value, ft.In(len(args)+1)), last)
}

// lifecycle calls an optional method, passing ctx and emit where it takes them.
func (u *Fn) lifecycle(ctx context.Context, name string, emit *reflect.Value) error {
	m, ok := u.methods[name]
	if !ok {
		return nil
	}
	ft := m.Type()
	var args []reflect.Value
	for i := 0; i < ft.NumIn(); i++ {
		switch ft.In(i) {
		case contextType:
			args = append(args, reflect.ValueOf(ctx))
		default:
			args = append(args, *emit)
		}
	}
	if err := resultError(m.Call(args)); err != nil {
		return fmt.Errorf("%s.%s: %w", strings.TrimPrefix(u.Name, "*"), name, err)
	}
	return nil
}

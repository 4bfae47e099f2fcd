package async

// The wrapped fn: checking its shape at construction, rebuilding it on a
// worker, and calling it (ProcessElement with its bundle methods, Revert)
// with panics turned into errors.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
)

var (
	contextType = reflect.TypeOf((*context.Context)(nil)).Elem()
	errorType   = reflect.TypeOf((*error)(nil)).Elem()
	closureName = regexp.MustCompile(`\.func\d+(\.\d+)*$`)
)

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

// userSpec is the serialisable description of the wrapped fn: either a
// registered DoFn struct (its type and the JSON of its exported fields) or a
// registered function.
type userSpec struct {
	Type *beam.EncodedType `json:",omitempty"`
	JSON string            `json:",omitempty"`
	Func *shippedFunc      `json:",omitempty"`
	// Batch: the fn is BatchParDo's, with ProcessBatch (batchfn.go).
	Batch bool `json:",omitempty"`
	// Pairs: the fn outputs key-value pairs of these types (shape.go).
	Pairs *pairTypes `json:",omitempty"`
	// Enrich: the fn is Enrich's lookup, called with the key only (a
	// struct's Lookup method), and answers are joined into records
	// (enrich.go).
	Enrich *enrichSpec `json:",omitempty"`
}

// method is the name of the struct method that is the wrapped fn's call.
func (s userSpec) method() string {
	if s.Enrich != nil {
		return "Lookup"
	}
	return "ProcessElement"
}

// batchMethod is the name of the struct method that is a batch fn's call.
func (s userSpec) batchMethod() string {
	if s.Enrich != nil {
		return "LookupBatch"
	}
	return "ProcessBatch"
}

// hasRevert reports whether the wrapped fn is a DoFn struct with a Revert
// method.
func (s userSpec) hasRevert() bool {
	if s.Type == nil || s.Enrich != nil {
		return false
	}
	_, ok := reflect.PointerTo(s.Type.T).MethodByName("Revert")
	return ok
}

// inspectFn checks fn against the input's key and value types and returns the
// spec that will be shipped to workers and the output type.
func inspectFn(fn any, keyT, valT reflect.Type) (userSpec, reflect.Type, error) {
	return inspectForm(fn, fnForm{
		accepts: "a pointer to a registered DoFn struct or a registered function of the form " + expectedShape,
		what:    "fn",
		checkFunc: func(ft reflect.Type) (outputShape, error) {
			shape, err := analyzeProcess(ft, keyT, valT, "fn")
			return shape.out, err
		},
		checkStruct: func(pt reflect.Type) (outputShape, error) {
			shape, err := checkStruct(pt, keyT, valT)
			return shape.out, err
		},
	})
}

// fnForm is one form of wrapped fn (async.ParDo's, BatchParDo's): what
// inspectForm checks a function or a struct pointer against.
type fnForm struct {
	accepts string // what a fn may be, in errors
	what    string // the fn, as registeredStruct names it
	// checkFunc and checkStruct check a function's type, or a struct
	// pointer's type, and return what it outputs.
	checkFunc, checkStruct func(reflect.Type) (outputShape, error)
	batch                  bool
}

// inspectForm checks fn, a registered function or a pointer to a registered
// struct, against form, and returns the spec that will be shipped to
// workers and the type of the outputs the transform's DoFns emit: O, or
// kvOutput for key-value pairs (spec.Pairs).
func inspectForm(fn any, form fnForm) (userSpec, reflect.Type, error) {
	spec, out, err := inspectShape(fn, form)
	if err != nil {
		return userSpec{}, nil, err
	}
	if !out.pairs() {
		return spec, out.value, nil
	}
	spec.Pairs = &pairTypes{Key: beam.EncodedType{T: out.key}, Value: beam.EncodedType{T: out.value}}
	return spec, kvOutputType, nil
}

// inspectShape is inspectForm before the outputs' type is decided.
func inspectShape(fn any, form fnForm) (userSpec, outputShape, error) {
	if fn == nil {
		return userSpec{}, outputShape{}, fmt.Errorf("fn is nil: pass %s", form.accepts)
	}
	v := reflect.ValueOf(fn)
	switch {
	case v.Kind() == reflect.Func:
		out, err := form.checkFunc(v.Type())
		if err != nil {
			return userSpec{}, outputShape{}, err
		}
		encoded, err := encodeFunc("fn", fn)
		if err != nil {
			return userSpec{}, outputShape{}, err
		}
		return userSpec{Func: encoded, Batch: form.batch}, out, nil
	case v.Kind() == reflect.Ptr && v.Type().Elem().Kind() == reflect.Struct:
		t, err := registeredStruct(form.what, v)
		if err != nil {
			return userSpec{}, outputShape{}, err
		}
		out, err := form.checkStruct(v.Type())
		if err != nil {
			return userSpec{}, outputShape{}, err
		}
		spec, err := structSpec(fn, t)
		spec.Batch = form.batch
		return spec, out, err
	case v.Kind() == reflect.Struct:
		return userSpec{}, outputShape{}, fmt.Errorf("fn is a %v value: pass a pointer (&%v{...}) so that its methods are found", v.Type(), v.Type().Name())
	default:
		return userSpec{}, outputShape{}, fmt.Errorf("fn is a %v: want %s", v.Type(), form.accepts)
	}
}

// structSpec is the spec of a DoFn struct fn of type t: its type and the
// JSON of its exported fields.
func structSpec(fn any, t reflect.Type) (userSpec, error) {
	body, err := json.Marshal(fn)
	if err != nil {
		return userSpec{}, fmt.Errorf("fn %v cannot be serialised as JSON of its exported fields: %w", t, err)
	}
	return userSpec{Type: &beam.EncodedType{T: t}, JSON: string(body)}, nil
}

// registeredStruct checks that v, given as what, is a non-nil pointer to a
// named struct type registered with Beam (so that a worker can rebuild it),
// and returns the struct type.
func registeredStruct(what string, v reflect.Value) (reflect.Type, error) {
	if v.Kind() != reflect.Ptr || v.Type().Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is a %v: want a pointer to a registered named struct type", what, v.Type())
	}
	if v.IsNil() {
		return nil, fmt.Errorf("%s is a nil %v: pass a pointer to a value", what, v.Type())
	}
	t := v.Type().Elem()
	if key, ok := runtime.TypeKey(t); !ok {
		return nil, fmt.Errorf("%s type %v is unnamed: declare a named struct type and register it", what, t)
	} else if _, ok := runtime.LookupType(key); !ok {
		if what == "fn" {
			return nil, fmt.Errorf("fn type %v is not registered: add %s to an init() function of package %s", t, strings.Join(doFnLines(t), " and "), t.PkgPath())
		}
		return nil, fmt.Errorf("%s type %v is not registered: call beam.RegisterType(reflect.TypeOf((*%s)(nil)).Elem()) in an init() function, before beam.Init", what, t, t.Name())
	}
	return t, nil
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

// lifecycle lists the optional methods forwarded to the wrapped DoFn.
var lifecycle = []string{"Setup", "StartBundle", "FinishBundle", "Teardown"}

func checkStruct(pt reflect.Type, keyT, valT reflect.Type) (procShape, error) {
	m, ok := pt.MethodByName("ProcessElement")
	if !ok {
		if _, ok := pt.MethodByName("ProcessBatch"); ok {
			return procShape{}, fmt.Errorf("fn %v has ProcessBatch but no ProcessElement: use async.BatchParDo for it", pt)
		}
		return procShape{}, fmt.Errorf("fn %v has no ProcessElement method; want %s", pt, expectedShape)
	}
	shape, err := analyzeProcess(methodType(m), keyT, valT, fmt.Sprintf("%v.ProcessElement", pt))
	if err != nil {
		return procShape{}, err
	}
	for _, name := range lifecycle {
		m, ok := pt.MethodByName(name)
		if !ok {
			continue
		}
		if err := checkLifecycle(name, methodType(m), shape.emitT); err != nil {
			return procShape{}, fmt.Errorf("fn %v: %w", pt, err)
		}
	}
	if m, ok := pt.MethodByName("Revert"); ok {
		if err := checkRevert(methodType(m), keyT, valT); err != nil {
			return procShape{}, fmt.Errorf("fn %v: %w", pt, err)
		}
	}
	return shape, nil
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

// userFn is the wrapped fn on a worker. Its ProcessElement (with StartBundle
// before and FinishBundle after, per element) runs concurrently on the pool's
// goroutines. Teardown waits for the last running call: see close.
type userFn struct {
	name string
	// invoke calls ProcessElement and returns its results.
	invoke  func(args []reflect.Value) []any
	procT   reflect.Type // ProcessElement's type, without receiver
	shape   procShape
	pairs   *pairTypes               // the outputs' types when they are pairs
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

// startUserFn rebuilds the wrapped fn on a worker and forwards its Setup:
// the first step of every DoFn of the transform that calls it.
func startUserFn(ctx context.Context, spec userSpec) (*userFn, error) {
	u, err := newUserFn(spec)
	if err != nil {
		return nil, err
	}
	if err := u.setup(ctx); err != nil {
		return nil, fmt.Errorf("async: %w", err)
	}
	return u, nil
}

func newUserFn(spec userSpec) (*userFn, error) {
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
		u := &userFn{name: fn.Name(), invoke: invoke, procT: fn.Type(), pairs: spec.Pairs, methods: map[string]reflect.Value{}}
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
		u := &userFn{name: spec.Type.T.String(), pairs: spec.Pairs, methods: map[string]reflect.Value{}}
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
		m := ptr.MethodByName(spec.method())
		if !m.IsValid() {
			return nil, fmt.Errorf("async: rebuilding wrapped fn %v: it has no %s method", spec.Type.T, spec.method())
		}
		u.invoke = func(args []reflect.Value) []any { return interfaces(m.Call(args)) }
		u.procT = m.Type()
		return u, u.analyze(spec)
	}
	return nil, fmt.Errorf("async: the transform carries no wrapped fn")
}

// analyze reads the shape of ProcessElement (or Enrich's lookup), checked
// at construction.
func (u *userFn) analyze(spec userSpec) (err error) {
	if spec.Enrich != nil {
		u.shape, err = analyzeLookup(u.procT, nil, u.name)
	} else {
		u.shape, err = analyzeProcess(u.procT, nil, nil, u.name+".ProcessElement")
	}
	if err != nil {
		return fmt.Errorf("async: rebuilding the wrapped fn: %w", err)
	}
	return nil
}

// interfaces returns the values of vs as interfaces.
func interfaces(vs []reflect.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v.Interface()
	}
	return out
}

// setup forwards Setup.
func (u *userFn) setup(ctx context.Context) error { return u.lifecycle(ctx, "Setup", nil) }

// acquire counts a call that is about to be started; it fails once the fn
// is closing. Every successful acquire is matched by release.
func (u *userFn) acquire() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closing {
		return false
	}
	u.refs++
	return true
}

// release ends an acquired call, and tears the fn down if it was the last one of
// a closing fn.
func (u *userFn) release() {
	u.mu.Lock()
	u.refs--
	last := u.closing && u.refs == 0
	u.mu.Unlock()
	if last {
		u.teardown(context.Background())
	}
}

// close forwards Teardown now if no call is running, or else after the last
// running call returns: calls started by this instance may outlive it, since
// the pool is shared and another instance may commit their results.
func (u *userFn) close(ctx context.Context) error {
	u.mu.Lock()
	u.closing = true
	now := u.refs == 0
	u.mu.Unlock()
	if now {
		return u.lifecycle(ctx, "Teardown", nil)
	}
	return nil
}

func (u *userFn) teardown(ctx context.Context) {
	if err := u.lifecycle(ctx, "Teardown", nil); err != nil {
		log.Warnf(ctx, "async: Teardown of %s after its last call: %v", u.name, err)
	}
}

// call runs StartBundle, ProcessElement and FinishBundle for one element and
// returns everything they emitted or ProcessElement returned.
func (u *userFn) call(ctx context.Context, in callInput) ([]any, error) {
	out := &callOutputs{pairs: newPairEncoder(u.pairs)}
	var emit reflect.Value
	if u.shape.emitT != nil {
		emit = reflect.MakeFunc(u.shape.emitT, out.emit)
	}
	if err := u.lifecycle(ctx, "StartBundle", &emit); err != nil {
		return nil, err
	}
	args, err := u.shape.args(u.procT, ctx, in, emit)
	if err != nil {
		return nil, err
	}
	res := u.invoke(args)
	if u.shape.returnsError {
		if err, _ := res[len(res)-1].(error); err != nil {
			return nil, err
		}
	}
	if u.shape.returned > 0 {
		out.add(res[:u.shape.returned]...)
	}
	if err := u.lifecycle(ctx, "FinishBundle", &emit); err != nil {
		return nil, err
	}
	if out.err != nil {
		return nil, Permanent(out.err) // the same outputs would fail again
	}
	return out.list, nil
}

// callOutputs gathers one call's outputs: emitted (as Beam's emitters, not
// safe for concurrent use) or returned.
type callOutputs struct {
	pairs *pairEncoder // nil: the outputs are values of one type
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

// revert calls the compensation method, if the fn has one, for an element
// that failed for good; a panic in it becomes an error.
func (u *userFn) revert(ctx context.Context, key, value any, cause error) (err error) {
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
func (u *userFn) lifecycle(ctx context.Context, name string, emit *reflect.Value) error {
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
		return fmt.Errorf("%s.%s: %w", strings.TrimPrefix(u.name, "*"), name, err)
	}
	return nil
}

// valueOf converts an element to the parameter type, mapping a nil interface
// to the parameter's zero value.
func valueOf(x any, t reflect.Type) reflect.Value {
	if x == nil {
		return reflect.Zero(t)
	}
	return reflect.ValueOf(x)
}

func resultError(out []reflect.Value) error {
	if len(out) == 0 || out[0].IsNil() {
		return nil
	}
	return out[0].Interface().(error)
}

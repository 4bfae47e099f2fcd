package async

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// DoFn structs whose register lines TestDoFnLines checks; init registers
// each with the very lines the test expects, to prove that they compile.
type printedFn struct{}

func (*printedFn) ProcessElement(ctx context.Context, key int64, v string, emit func(string)) error {
	return nil
}

type printedWindowFn struct{}

func (printedWindowFn) ProcessElement(key sku, v lineItem, emit func(beam.EventTime, sku, []byte)) {}

type printedPtrFn struct{}

func (*printedPtrFn) ProcessElement(ctx context.Context, key string, v *lineItem, iter func(*int) bool, emit func(string, map[string][]int)) (int, error) {
	return 0, nil
}

// printedBatch has no ProcessElement: register.DoFnNxM does not fit it.
type printedBatch struct{}

func (*printedBatch) ProcessBatch(keys []string, values []int, emit func(int, string)) {}

// unregisteredDoFn and the functions below are never registered.
type unregisteredDoFn struct{}

func (*unregisteredDoFn) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	return nil
}

func unregisteredKey(v int) string { return "" }

func unregisteredLabel(ctx context.Context, key string, v int, emit func(string)) error { return nil }

func unregisteredVariadic(vs ...int) string { return "" }

func registeredKey(v int) string { return "" }

func init() {
	register.DoFn4x1[context.Context, int64, string, func(string), error](&printedFn{})
	register.Emitter1[string]()
	register.DoFn3x0[sku, lineItem, func(beam.EventTime, sku, []byte)](&printedWindowFn{})
	register.Emitter3[beam.EventTime, sku, []byte]()
	register.DoFn5x2[context.Context, string, *lineItem, func(*int) bool, func(string, map[string][]int), int, error](&printedPtrFn{})
	register.Iter1[int]()
	register.Emitter2[string, map[string][]int]()
	beam.RegisterType(reflect.TypeOf((*printedBatch)(nil)).Elem())
	register.Function1x1(registeredKey)
	register.Function4x1(registeredLabel) // unregisteredLabel's line, for a function of its type
	// Functions of other test files given to options that now must be
	// registered (WithIDFn, WithRetryIf).
	register.Function1x1(panickyID)
	register.Function1x1(constantID)
	register.Function1x1(notTimeout)
	register.Function1x1(neverRetry)
	register.Function1x1(retryPanics)
}

func registeredLabel(ctx context.Context, key string, v int, emit func(string)) error { return nil }

func TestDoFnLines(t *testing.T) {
	tests := []struct {
		t    reflect.Type
		want []string
	}{
		{reflect.TypeOf(printedFn{}), []string{
			"register.DoFn4x1[context.Context, int64, string, func(string), error](&printedFn{})",
			"register.Emitter1[string]()"}},
		{reflect.TypeOf(printedWindowFn{}), []string{
			"register.DoFn3x0[sku, lineItem, func(beam.EventTime, sku, []byte)](&printedWindowFn{})",
			"register.Emitter3[beam.EventTime, sku, []byte]()"}},
		{reflect.TypeOf(printedPtrFn{}), []string{
			"register.DoFn5x2[context.Context, string, *lineItem, func(*int) bool, func(string, map[string][]int), int, error](&printedPtrFn{})",
			"register.Iter1[int]()",
			"register.Emitter2[string, map[string][]int]()"}},
		{reflect.TypeOf(printedBatch{}), []string{
			"beam.RegisterType(reflect.TypeOf((*printedBatch)(nil)).Elem())"}},
	}
	for _, tc := range tests {
		if got := wrapped.DoFnLines(tc.t); !slices.Equal(got, tc.want) {
			t.Errorf("doFnLines(%v) =\n\t%q\nwant\n\t%q", tc.t, got, tc.want)
		}
	}
}

func TestFunctionLines(t *testing.T) {
	tests := []struct {
		fn   any
		want []string
	}{
		{unregisteredKey, []string{"register.Function1x1(unregisteredKey)"}},
		{unregisteredLabel, []string{"register.Function4x1(unregisteredLabel)", "register.Emitter1[string]()"}},
		{unregisteredVariadic, []string{"beam.RegisterFunction(unregisteredVariadic)"}},
		{(*printedFn).ProcessElement, []string{"register.Function5x1((*printedFn).ProcessElement)", "register.Emitter1[string]()"}},
	}
	for _, tc := range tests {
		err := wrapped.CheckRegistered("WithIDFn", tc.fn)
		if err == nil {
			t.Errorf("checkRegistered(%T) = nil; want an error", tc.fn)
			continue
		}
		want := "add " + strings.Join(tc.want, " and ") + " to an init() function of package github.com/asyncbeam/asyncbeam/transforms/async"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("checkRegistered(%T) = %q; want it to say %q", tc.fn, err, want)
		}
	}
}

func TestRegistrationChecked(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string // "" for nil
	}{
		{"registered ID fn", valueFnErr("WithIDFn", registeredKey), ""},
		{"unregistered ID fn", valueFnErr("WithIDFn", unregisteredKey),
			"WithIDFn: function github.com/asyncbeam/asyncbeam/transforms/async.unregisteredKey is not registered with Beam, so a worker may not find it: add register.Function1x1(unregisteredKey) to an init() function"},
		{"unregistered, asked again", valueFnErr("WithPriority", unregisteredKey), "register.Function1x1(unregisteredKey)"},
		{"method value", valueFnErr("WithIDFn", (&lineItem{}).text), "lineItem).text is a method value"},
		{"unregistered retry predicate", retryIfErr(unregisteredRetry),
			"WithRetryIf: function github.com/asyncbeam/asyncbeam/transforms/async.unregisteredRetry is not registered"},
		{"registered fn", fnErr(registeredLabel), ""},
		{"unregistered fn", fnErr(unregisteredLabel),
			"fn: function github.com/asyncbeam/asyncbeam/transforms/async.unregisteredLabel is not registered"},
		{"unregistered DoFn struct", fnErr(&unregisteredDoFn{}),
			"fn type async.unregisteredDoFn is not registered: add register.DoFn4x1[context.Context, string, int, func(string), error](&unregisteredDoFn{}) and register.Emitter1[string]() to an init() function of package github.com/asyncbeam/asyncbeam/transforms/async"},
	}
	for _, tc := range tests {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v; want nil", tc.name, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: %v; want an error containing %q", tc.name, tc.err, tc.want)
		}
	}
}

// valueFnErr, retryIfErr and fnErr are the construction checks' errors for
// a function of the value (func(int) string), a retry predicate and a
// wrapped fn over KV<string, int>.
func valueFnErr(option string, fn any) error {
	_, err := inspectValueFn(option, fn, reflect.TypeOf(0), reflect.TypeOf(""))
	return err
}

func retryIfErr(fn func(error) bool) error {
	_, err := inspectRetryIf(fn)
	return err
}

func fnErr(fn any) error {
	_, _, err := wrapped.Inspect(fn, reflect.TypeOf(""), reflect.TypeOf(0))
	return err
}

func (l *lineItem) text(int) string { return l.SKU }

func unregisteredRetry(error) bool { return true }

// symbolOnlyFn is never registered and never checked: the test below
// resolves it from the symbol table, as a worker resolves an unregistered
// function.
func symbolOnlyFn(v int) string { return "" }

// TestRegisteredWhileResolving checks functions while other goroutines
// resolve functions as Beam's workers do, reading runtime.Resolver without
// our lock: the checks must not race with them (go test -race) nor hide
// the symbol table from them.
func TestRegisteredWhileResolving(t *testing.T) {
	symbol := reflectx.FunctionName(symbolOnlyFn)
	_, err := runtime.Resolver.Sym2Addr(symbol)
	haveSymbols := err == nil // false unless go test is given -ldflags=-s=false
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A cache miss: ResolveFunction reads runtime.Resolver.
			if _, err := runtime.ResolveFunction(symbol, reflect.TypeOf(symbolOnlyFn)); haveSymbols && err != nil {
				t.Errorf("ResolveFunction(%s) during checks: %v", symbol, err)
			}
			for range 200 {
				if _, err := runtime.ResolveFunction(reflectx.FunctionName(registeredKey), reflect.TypeOf(registeredKey)); err != nil {
					t.Errorf("ResolveFunction(registeredKey) during checks: %v", err)
					return
				}
				if _, err := runtime.Resolver.Sym2Addr(symbol); haveSymbols && err != nil {
					t.Errorf("Resolver.Sym2Addr(%s) during checks: %v", symbol, err)
					return
				}
			}
		}()
	}
	for range 200 {
		if !wrapped.IsRegistered(registeredKey) {
			t.Fatal("isRegistered(registeredKey) = false")
		}
		if wrapped.IsRegistered(unregisteredKey) {
			t.Fatal("isRegistered(unregisteredKey) = true")
		}
	}
	wg.Wait()
}

// replacedFn is never registered; the test below checks it under a
// resolver that finds every symbol, when the test binary has a symbol
// table (go test strips it unless given -ldflags=-s=false).
func replacedFn(v int) string { return "" }

// TestRegisteredResolverReplaced replaces runtime.Resolver after init, as a
// user or the vet runner may: a check must wrap the new resolver rather
// than resolve the function from the symbol table, which would also cache
// it and make it look registered from then on.
func TestRegisteredResolverReplaced(t *testing.T) {
	saved := runtime.Resolver
	ours, ok := saved.(*wrapped.CheckingResolver)
	if !ok {
		t.Fatalf("runtime.Resolver is a %T; want the *checkingResolver that init installs", saved)
	}
	t.Cleanup(func() { runtime.Resolver = saved })
	runtime.Resolver = ours.Next // finds every symbol in the binary, if it has a symbol table
	for i := range 2 {
		if wrapped.IsRegistered(replacedFn) {
			t.Fatalf("check %d: isRegistered(replacedFn) = true after runtime.Resolver was replaced", i+1)
		}
	}
	if r, ok := runtime.Resolver.(*wrapped.CheckingResolver); !ok || r.Next != ours.Next {
		t.Errorf("after a check, runtime.Resolver is %#v; want a *checkingResolver over the replacement", runtime.Resolver)
	}
}

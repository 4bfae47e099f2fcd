package async

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/asyncbeam/asyncbeam/runner/nosplit"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// isUnbounded reports whether col is unbounded. beam.PCollection does not
// expose it, but its String form, which prints the graph node, marks
// unbounded collections with ":unbounded"; pardo_test.go checks both cases.
func isUnbounded(col beam.PCollection) bool {
	return strings.HasSuffix(col.String(), ":unbounded}")
}

// ParDo is TryParDo that panics on error, for use at pipeline construction.
func ParDo(s beam.Scope, fn any, col beam.PCollection, opts ...Option) beam.PCollection {
	out, err := TryParDo(s, fn, col, opts...)
	if err != nil {
		panic(err)
	}
	return out
}

// ParDoWithFailures is TryParDoWithFailures that panics on error.
func ParDoWithFailures(s beam.Scope, fn any, col beam.PCollection, opts ...Option) (out, failures beam.PCollection) {
	out, failures, err := TryParDoWithFailures(s, fn, col, opts...)
	if err != nil {
		panic(err)
	}
	return out, failures
}

// TryParDoWithFailures is TryParDo with a second output: the PCollection<Failure>
// of elements that failed for good (their attempts exhausted, or a Permanent
// error). Each such element is written there exactly once and removed from
// bag state in the same callback, instead of failing its key's commit.
func TryParDoWithFailures(s beam.Scope, fn any, col beam.PCollection, opts ...Option) (out, failures beam.PCollection, err error) {
	outs, err := buildParDo(s.Scope("async.ParDoWithFailures"), fn, col, true, opts)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, fmt.Errorf("async.ParDoWithFailures: %w", err)
	}
	return outs[0], outs[1], nil
}

// TryParDo applies fn to every element of col, a PCollection<KV<K, V>>,
// asynchronously, and returns the PCollection<O> of what fn emits or
// returns (PCollection<KV<K2, V2>> for pairs).
//
// fn is a pointer to a registered DoFn struct whose ProcessElement has one
// of the forms beam.ParDo takes over KV input:
//
//	ProcessElement([ctx context.Context,] [w beam.Window,] [t beam.EventTime,] key K, value V, emit func(O)) [error]
//	ProcessElement([ctx context.Context,] [w beam.Window,] [t beam.EventTime,] key K, value V, emit func(K2, V2)) [error]
//	ProcessElement([ctx context.Context,] [w beam.Window,] [t beam.EventTime,] key K, value V) (O [, error])
//	ProcessElement([ctx context.Context,] [w beam.Window,] [t beam.EventTime,] key K, value V) (K2, V2 [, error])
//
// (with optional Setup, StartBundle, FinishBundle and Teardown), or a
// top-level function of one of these forms. w and t are the element's
// window and event time, and every output is in that window at that time,
// as a plain ParDo's would be. One output only: a fn with several emitters
// or side inputs is refused. The error names what to change when col is not
// a KV, fn has another shape or is not registered, the key coder is not
// deterministic, or an option is invalid.
//
// An element that fails for good fails its key's commit with the cause; use
// TryParDoWithFailures to receive such elements as data instead.
func TryParDo(s beam.Scope, fn any, col beam.PCollection, opts ...Option) (beam.PCollection, error) {
	outs, err := buildParDo(s.Scope("async.ParDo"), fn, col, false, opts)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("async.ParDo: %w", err)
	}
	return outs[0], nil
}

// buildParDo validates everything and applies the stateful DoFn, which always has
// two outputs: the results and the failures.
func buildParDo(s beam.Scope, fn any, col beam.PCollection, hasFailures bool, opts []Option) ([]beam.PCollection, error) {
	return buildWith(s, col, hasFailures, opts, func(keyT, valT reflect.Type, set *settings) (wrapped.Spec, reflect.Type, error) {
		if set.cache != nil && set.cache.KeyFn != nil {
			return wrapped.Spec{}, nil, errCacheKeyFn
		}
		if set.batch.on {
			return wrapped.InspectBatch(fn, keyT, valT)
		}
		return wrapped.Inspect(fn, keyT, valT)
	})
}

// errCacheKeyFn refuses Cache.KeyFn on ParDo and BatchParDo.
var errCacheKeyFn = errors.New("WithCache: KeyFn caches one element's outputs for every element with the same key function value, which gives records each other's outputs; " +
	"to look something up by part of a record and merge it in, use async.Enrich (records keyed by the lookup key); without KeyFn the cache is keyed by the whole element")

// buildWith is buildParDo with the wrapped fn inspected by inspect, which may
// also adjust the settings (Enrich's default cache).
func buildWith(s beam.Scope, col beam.PCollection, hasFailures bool, opts []Option,
	inspect func(keyT, valT reflect.Type, set *settings) (wrapped.Spec, reflect.Type, error)) ([]beam.PCollection, error) {
	nosplit.Use() // prism's bundle splits lose bag state: turn them off
	if !col.IsValid() {
		return nil, fmt.Errorf("the input PCollection is invalid (zero value?)")
	}
	if !typex.IsKV(col.Type()) {
		return nil, fmt.Errorf("the input must be a PCollection<KV<K, V>>, got PCollection<%v>; key it first, for example with beam.ParDo(s, func(v V) (K, V) {...}, col)", col.Type())
	}
	keyT, valT := col.Type().Components()[0].Type(), col.Type().Components()[1].Type()
	if err := wrapped.CheckKeyType(keyT); err != nil {
		return nil, err
	}
	set, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	installPortable() // a job server gets what this transform needs, whatever launches it (jobedit.go)
	set.resolveDrain(isUnbounded(col), flagRunner())
	spec, outT, err := inspect(keyT, valT, &set)
	if err != nil {
		return nil, err
	}
	cfg, err := newConfig(s.String(), spec, keyT, valT, set, hasFailures)
	if err != nil {
		return nil, err
	}
	c := worker.Core{Config: cfg}
	outs, unrestorable, err := applyPath(s, c, col, outT)
	if err != nil {
		return nil, err
	}
	if hasFailures && spec.HasRevert() {
		if outs[1], err = revertStep(s, spec, c, outs[1]); err != nil {
			return nil, err
		}
	}
	if unrestorable.IsValid() { // never called, so never reverted
		if outs[1], err = beam.TryFlatten(s, outs[1], unrestorable); err != nil {
			return nil, err
		}
	}
	if spec.Pairs != nil {
		if outs[0], err = splitPairs(s, *spec.Pairs, outs[0]); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// revertStep runs the wrapped fn's Revert over committed failure records.
func revertStep(s beam.Scope, spec wrapped.Spec, c worker.Core, failures beam.PCollection) (beam.PCollection, error) {
	// The reshuffle is a checkpoint: without it a runner fuses the revert step
	// into the transform's bundle, and Revert would run before that bundle
	// (which may yet fail and be retried, and the element then succeed) is
	// committed. Not on Flink, where it is a rebalance: there the step needs
	// stable input (stableinput.go, jobedit.go).
	rs := s.Scope("Revert")
	committed, err := beam.TryReshuffle(rs, failures)
	if err != nil {
		return beam.PCollection{}, err
	}
	reverted, err := beam.TryParDo(rs, &revertFn{User: spec, KeyType: c.KeyType, ValueType: c.ValueType}, committed)
	if err != nil {
		return beam.PCollection{}, err
	}
	return reverted[0], nil
}

// applyPath applies the DoFn chooseDoFn picks for col. Input that is not in the
// global window goes through the global window, each element with its
// window, and each output comes back to its element's window (windows.go);
// the failure records of elements whose window cannot come back
// (unrestorable, with a failure output) are returned apart.
func applyPath(s beam.Scope, c worker.Core, col beam.PCollection, outT reflect.Type) (outs []beam.PCollection, unrestorable beam.PCollection, err error) {
	in, inner := col, outT
	c.OutputType = &beam.EncodedType{T: outT} // the result cache encodes outputs with it
	if carriesWindows(col) {
		if in, unrestorable, err = carryWindows(s, col, c.Config); err != nil {
			return nil, beam.PCollection{}, err
		}
		c.Carried, inner = true, reflect.TypeOf(windowed{})
	}
	if outs, err = beam.TryParDo(s, chooseDoFn(c, in), in, beam.TypeDefinition{Var: beam.ZType, T: inner}); err != nil {
		return nil, beam.PCollection{}, err
	}
	if len(outs) == 3 { // streamFn's third output: the drain's records
		if outs, err = drainStep(s, c, outs, inner); err != nil {
			return nil, beam.PCollection{}, err
		}
	}
	if !c.Carried {
		return outs, unrestorable, nil
	}
	for i, t := range []reflect.Type{outT, terms.FailureType} {
		if outs[i], err = restoreWindows(s, col, outs[i], t); err != nil {
			return nil, beam.PCollection{}, err
		}
	}
	return outs, unrestorable, nil
}

// drainStep applies the end-of-input drain (internal/drain) to streamFn's
// records, with WithEndOfInputDrain, and adds what it runs to the
// outputs and failures, before their windows are restored.
func drainStep(s beam.Scope, c worker.Core, outs []beam.PCollection, inner reflect.Type) ([]beam.PCollection, error) {
	if !c.Drain {
		return outs[:2], nil // never written
	}
	ds := s.Scope("Drain")
	drained, err := beam.TryParDo(ds, newEscrowFn(c), outs[2], beam.TypeDefinition{Var: beam.ZType, T: inner})
	if err != nil {
		return nil, err
	}
	for i := range 2 {
		if outs[i], err = beam.TryFlatten(ds, outs[i], drained[i]); err != nil {
			return nil, err
		}
	}
	return outs[:2], nil
}

// chooseDoFn picks the DoFn for the input (see the package doc, "How it
// works"). The stateful one declares a single timer family: Beam Go v2.77.0
// hangs a bundle on prism when a DoFn declares two (the SDK expects one
// end-of-timers signal per transform, prism sends one per family).
func chooseDoFn(c worker.Core, col beam.PCollection) any {
	switch {
	case isUnbounded(col):
		return newStreamFn(c)
	case c.Ordered, c.IDFn != nil: // records of one key must meet: one bundle at a time per key
		return newKeyedBundleFn(c)
	}
	return newBundleFn(c)
}

package async

// From options to the transform's configuration: resolve applies the
// options and checks their combination, resolveDrain sets the drain's
// default for the runner, and newConfig checks the functions the options
// carry and builds the terms.Config shipped to workers.

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/runner/portable"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// resolve applies opts and validates the combination.
func resolve(opts []Option) (settings, error) {
	s := defaultSettings()
	for _, o := range opts {
		if o == nil {
			s.errs = append(s.errs, errors.New("a nil Option was passed"))
			continue
		}
		o(&s)
	}
	resolveProtection(&s.protect, &s)
	s.resolveCache()
	s.resolveBatch()
	if s.buffer == 0 {
		s.buffer = max(2*s.parallelism, 10)
	} else if s.buffer < s.parallelism {
		s.errs = append(s.errs, fmt.Errorf("WithMaxItemsToBuffer(%d) is smaller than the parallelism %d: at most %d calls could ever run; raise the buffer or lower the parallelism", s.buffer, s.parallelism, s.buffer))
	}
	if s.held == 0 {
		s.held = max(64*s.parallelism, s.buffer)
	} else if s.held < s.buffer {
		s.errs = append(s.errs, fmt.Errorf("WithMaxItemsHeld(%d) is smaller than the buffer %d (WithMaxItemsToBuffer, default max(2*parallelism, 10), or 2*parallelism*batch size for async.BatchParDo): raise it, or lower the buffer", s.held, s.buffer))
	}
	return s, errors.Join(s.errs...)
}

// inspectRetryIf checks the retry predicate.
func inspectRetryIf(fn func(error) bool) (*wrapped.Shipped, error) {
	if fn == nil {
		return nil, nil
	}
	return wrapped.EncodeFunc("WithRetryIf", fn)
}

// inspectValueFn checks a function of the element's value (WithIDFn,
// WithPriority): func(V) out.
func inspectValueFn(option string, fn any, valT, out reflect.Type) (*wrapped.Shipped, error) {
	if fn == nil {
		return nil, nil
	}
	ft := reflect.TypeOf(fn)
	if ft.Kind() != reflect.Func || ft.NumIn() != 1 || ft.NumOut() != 1 || !valT.AssignableTo(ft.In(0)) || ft.Out(0) != out {
		return nil, fmt.Errorf("%s: fn has type %v; want func(%v) %v", option, ft, valT, out)
	}
	return wrapped.EncodeFunc(option, fn)
}

// newConfig checks everything about the transform that is not the input and
// the wrapped fn (already inspected as spec) and returns its configuration.
func newConfig(name string, spec wrapped.Spec, keyT, valT reflect.Type, set settings, hasFailures bool) (terms.Config, error) {
	idFn, err := inspectValueFn("WithIDFn", set.idFn, valT, reflect.TypeOf(""))
	if err != nil {
		return terms.Config{}, err
	}
	retryIf, err := inspectRetryIf(set.retryIf)
	if err != nil {
		return terms.Config{}, err
	}
	priorityFn, err := inspectValueFn("WithPriority", set.priorityFn, valT, reflect.TypeOf(0))
	if err != nil {
		return terms.Config{}, err
	}
	listeners, err := inspectListeners(set.listeners)
	if err != nil {
		return terms.Config{}, err
	}
	return terms.Config{
		Name:              name,
		ID:                uuid.NewString(),
		TimerSuffix:       terms.TimerSuffix(name),
		User:              spec,
		KeyType:           beam.EncodedType{T: keyT},
		ValueType:         beam.EncodedType{T: valT},
		IDFn:              idFn,
		Parallelism:       set.parallelism,
		Buffer:            set.buffer,
		Held:              set.held,
		CallbackFrequency: set.callbackFrequency,
		MaxWait:           set.maxWait,
		CallTimeout:       set.callTimeout,
		MaxAttempts:       set.maxAttempts,
		Backoff:           set.backoff,
		RetryIf:           retryIf,
		Fallbacks:         set.fallbacks,
		HasFailures:       hasFailures,
		Ordered:           set.ordered,
		PriorityFn:        priorityFn,
		Listeners:         listeners,
		Protect:           set.protect,
		Cache:             terms.InspectCache(set.cache),
		Batch:             newBatchSpec(set.batch),
		Drain:             set.drain,
		DrainDeclined:     set.drainSet && !set.drain,
	}, nil
}

// resolveDrain sets the end-of-input drain's default: on for unbounded input
// built for Flink, where pending elements are otherwise lost at the end of
// input; off elsewhere (prism fires the commit timers until the keys are
// empty, run; Dataflow does, read). Turning it off for Flink is logged
// with what it loses.
func (s *settings) resolveDrain(unbounded bool, runner portable.Kind) {
	switch {
	case !unbounded || runner != portable.Flink:
	case !s.drainSet:
		s.drain = true
	case !s.drain:
		declinedDrainLog.Do(func() {
			slog.Warn("async: WithoutEndOfInputDrain on Flink: the elements still pending when the input ends, or when the job is drained, " +
				"get no output and no failure record (Flink drops processing-time timers of the global window at its final watermark)")
		})
	}
}

var declinedDrainLog sync.Once

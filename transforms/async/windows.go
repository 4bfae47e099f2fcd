package async

// Windows: the transform's DoFns run in the global window whatever the
// input's windowing, and every output goes back to its own element's
// window, exactly.
//
// Why. A DoFn's output takes the window of whatever element or timer is
// being processed when it is emitted (Beam Go lets a DoFn set an output's
// timestamp, not its window). The transform emits an element's outputs
// later, from another element's ProcessElement, a timer or FinishBundle, so
// in the input's own windows it could emit an output only from a callback
// of that same key and window: per-window state, per-window drains on
// bounded input (one key and window after another), state that Dataflow
// collects once the input watermark passes the window (losing what is
// pending), and no state at all for merging windows (sessions). In the
// global window none of that arises: one state per key, one timer, and the
// bundle path for every bounded input.
//
// How. On input that is not in the global window, carryFn (observing the
// window, so that Beam hands it an element in several windows once per
// window) wraps each element's value with its window, and the input moves
// to the global window. The DoFns keep the window with the element (its
// identity is key, window and ID) and wrap each output with it. After them,
// the outputs take the input's windowing again (its window fn, trigger,
// accumulation and allowed lateness), which assigns each output every window
// of that fn holding its timestamp, and restoreFn keeps only the copy in its
// element's own window. A failure record carries its window in
// Failure.Window and is restored the same way.
//
// That works when the element's window is one that the input's window fn
// assigns to its timestamp: always for fixed and sliding windows fed by
// WindowInto, for a GroupByKey's output in sliding windows (one window of
// several that hold its timestamp: restoreFn keeps that one), and for
// session windows before a GroupByKey (each element in [t, t+gap), merged
// only by a later GroupByKey, which then forms the same sessions as after a
// plain ParDo). It does not for an element whose timestamp a DoFn moved out
// of its window, or for sessions a GroupByKey has already merged: carryFn
// sends such an element to the failure output as KindWindow (never called)
// with ParDoWithFailures, and otherwise fails the bundle with the reason and
// what to change.

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// windowed is a value with the window it belongs to: an input element's
// value on its way into the DoFns, or an output on its way out, encoded with
// its coder.
type windowed struct {
	Window string
	Value  []byte
}

// registerCarry tells the machinery how a value carries its window (see
// worker.Carry).
func registerCarry() {
	worker.Carry.Open = func(v any) (string, []byte, bool) {
		w, ok := v.(windowed)
		return w.Window, w.Value, ok
	}
	worker.Carry.Wrap = func(window string, value []byte) any { return windowed{Window: window, Value: value} }
}

// windowText names a window: empty for the global window, "[start, end)" in
// Unix milliseconds of event time for an interval window. It is the window's
// identity in state and in Failure.Window.
func windowText(w typex.Window) string {
	switch w := w.(type) {
	case nil, window.GlobalWindow:
		return ""
	case window.IntervalWindow:
		return fmt.Sprintf("[%d, %d)", int64(w.Start), int64(w.End))
	}
	return fmt.Sprintf("%T%v", w, w)
}

// carriesWindows reports whether col's elements take the carry-and-restore
// path: every windowing but the global one.
func carriesWindows(col beam.PCollection) bool {
	ws := col.WindowingStrategy()
	return ws != nil && ws.Fn != nil && ws.Fn.Kind != window.GlobalWindows
}

// carryWindows wraps each element of col with its window and moves it to the
// global window. With a failure output (cfg.HasFailures), the elements whose
// window cannot come back are returned as failure records, in their
// windows.
func carryWindows(s beam.Scope, col beam.PCollection, cfg terms.Config) (carried, unrestorable beam.PCollection, err error) {
	fn := col.WindowingStrategy().Fn
	outs, err := beam.TryParDo(s, &carryFn{KeyType: cfg.KeyType, ValueType: cfg.ValueType, HasFailures: cfg.HasFailures,
		Kind: string(fn.Kind), Size: fn.Size, Period: fn.Period, Gap: fn.Gap}, col)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	if carried, err = beam.TryWindowInto(s, window.NewGlobalWindows(), outs[0]); err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	if cfg.HasFailures {
		unrestorable = outs[1]
	}
	return carried, unrestorable, nil
}

// restoreWindows puts each output of out (a PCollection<windowed> holding
// values of type t, or a PCollection<Failure>) back in its element's window,
// with input's windowing strategy.
func restoreWindows(s beam.Scope, input, out beam.PCollection, t reflect.Type) (beam.PCollection, error) {
	rewindowed, err := beam.TryWindowInto(s, input.WindowingStrategy().Fn, out, windowOptions(input)...)
	if err != nil {
		return beam.PCollection{}, err
	}
	if t == terms.FailureType {
		kept, err := beam.TryParDo(s, &restoreFailureFn{}, rewindowed)
		if err != nil {
			return beam.PCollection{}, err
		}
		return kept[0], nil
	}
	kept, err := beam.TryParDo(s, &restoreFn{Type: beam.EncodedType{T: t}}, rewindowed, beam.TypeDefinition{Var: beam.ZType, T: t})
	if err != nil {
		return beam.PCollection{}, err
	}
	return kept[0], nil
}

// windowOptions are the input's trigger, accumulation and allowed lateness,
// as WindowInto options.
func windowOptions(input beam.PCollection) []beam.WindowIntoOption {
	ws := input.WindowingStrategy()
	var opts []beam.WindowIntoOption
	if ws.Trigger != nil {
		opts = append(opts, beam.Trigger(ws.Trigger))
	}
	if ws.AccumulationMode == window.Accumulating {
		opts = append(opts, beam.PanesAccumulate())
	} else {
		opts = append(opts, beam.PanesDiscard())
	}
	return append(opts, beam.AllowedLateness(time.Duration(ws.AllowedLateness)*time.Millisecond))
}

// assignedWindows are the windows Beam's WindowInto gives an element at ts
// under the window fn of kind with these sizes (exec.WindowInto's rule).
func assignedWindows(kind window.Kind, size, period, gap time.Duration, ts mtime.Time) []typex.Window {
	switch kind {
	case window.FixedWindows:
		start := ts - (ts.Add(size) % mtime.FromDuration(size))
		return []typex.Window{window.IntervalWindow{Start: start, End: mtime.Min(start.Add(size), mtime.EndOfGlobalWindowTime.Add(time.Millisecond))}}
	case window.SlidingWindows:
		var out []typex.Window
		p := mtime.FromDuration(period)
		for start := ts - ts%p; start > ts.Subtract(size); start -= p {
			out = append(out, window.IntervalWindow{Start: start, End: start.Add(size)})
		}
		return out
	case window.Sessions:
		return []typex.Window{window.IntervalWindow{Start: ts, End: ts.Add(gap)}}
	}
	return []typex.Window{window.GlobalWindow{}}
}

// carryFn wraps each element's value with its window (see the file's
// comment), after checking that the window can be restored from the
// element's timestamp. An element whose window cannot fails its bundle with
// the reason, or, with a failure output, becomes a failure record of kind
// KindWindow (it is never called).
type carryFn struct {
	KeyType, ValueType beam.EncodedType
	HasFailures        bool
	Kind               string
	Size, Period, Gap  time.Duration
	keyEnc, valEnc     beam.ElementEncoder
}

func (f *carryFn) Setup() {
	f.keyEnc, f.valEnc = beam.NewElementEncoder(f.KeyType.T), beam.NewElementEncoder(f.ValueType.T)
}

func (f *carryFn) ProcessElement(w beam.Window, ts beam.EventTime, key beam.X, value beam.Y, emit func(beam.X, windowed), fail func(Failure)) error {
	vb, err := wrapped.Encode(f.valEnc, value)
	if err != nil {
		return fmt.Errorf("async: encoding a value of key %v: %w", key, err)
	}
	kind := window.Kind(f.Kind)
	if slices.ContainsFunc(assignedWindows(kind, f.Size, f.Period, f.Gap, ts), w.Equals) {
		emit(key, windowed{Window: windowText(w), Value: vb})
		return nil
	}
	why := f.unrestorable(w, ts, key)
	if !f.HasFailures {
		return why
	}
	kb, err := wrapped.Encode(f.keyEnc, key)
	if err != nil {
		return fmt.Errorf("async: encoding key %v: %w", key, err)
	}
	fail(Failure{Key: kb, Value: vb, KeyText: terms.FailureText(key), ValueText: terms.FailureText(value), Window: windowText(w), Error: why.Error(), Kind: KindWindow})
	return nil
}

// unrestorable is the error for an element whose window its timestamp does
// not give back.
func (f *carryFn) unrestorable(w beam.Window, ts beam.EventTime, key any) error {
	iw, ok := w.(window.IntervalWindow)
	switch {
	case ok && (ts < iw.Start || ts >= iw.End):
		return fmt.Errorf("async: an element of key %v has timestamp %v, outside its window %v: async.ParDo gives each output its element's window again from the output's timestamp, its element's; "+
			"emit elements with timestamps inside their windows, or window them after the step that moves their timestamps", key, ts, w)
	case window.Kind(f.Kind) == window.Sessions:
		return fmt.Errorf("async: an element of key %v at %v is in session window %v, which a GroupByKey has merged: async.ParDo runs on session windows before they merge (each element in [t, t+gap)) and a GroupByKey after it forms the sessions; "+
			"apply async.ParDo before the GroupByKey, or re-window its input (for example beam.WindowInto fixed windows) first", key, ts, w)
	}
	return fmt.Errorf("async: an element of key %v at %v is in window %v, which the input's %s windows do not assign to its timestamp, so its outputs could not be put back in it; re-window the input with beam.WindowInto first", key, ts, w, f.Kind)
}

// restoreFn passes on each output that its element's window holds (WindowInto
// just gave it every window holding its timestamp), decoded.
type restoreFn struct {
	Type beam.EncodedType
	dec  beam.ElementDecoder
}

func (f *restoreFn) Setup() { f.dec = beam.NewElementDecoder(f.Type.T) }

func (f *restoreFn) ProcessElement(w beam.Window, o windowed, emit func(beam.Z)) error {
	if windowText(w) != o.Window {
		return nil
	}
	v, err := wrapped.Decode(f.dec, o.Value)
	if err != nil {
		return fmt.Errorf("async: decoding an output of type %v: %w", f.Type.T, err)
	}
	emit(v)
	return nil
}

// restoreFailureFn is restoreFn for failure records.
type restoreFailureFn struct{}

func (*restoreFailureFn) ProcessElement(w beam.Window, fr Failure, emit func(Failure)) {
	if windowText(w) == fr.Window {
		emit(fr)
	}
}

package async

// Bounded input in fixed windows runs on the stateless bundle path: in the
// global window, with each output put back in its element's window by its
// timestamp.

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
)

// Why: a bundleFn emits each result when it finishes, during whatever
// element of the bundle is being processed, and an output emitted there takes
// that element's window. So a windowed bundle cannot emit across windows;
// the drain path (drainFn) can, but commits a key and window only from its
// own callbacks, which on bounded input come one key after another, and with
// one element per key runs about one call at a time (BENCHMARKS.md). Fixed
// windows partition time: the one window that holds an element is the one
// that holds its timestamp. Moving the input to the global window and
// applying the input's own windowing again to the outputs, whose
// timestamps are their elements', gives each output its element's window, at
// the bundle path's speed. Sliding windows do not have that property (an
// element after a GroupByKey sits in one of the windows its timestamp falls
// in), so they keep the drain path.

// fixedWindowOf names the fixed window of size that Beam assigns to an
// element at ts (exec.WindowInto's rule), for identities: length-prefixed,
// like the key before it.
func fixedWindowOf(ts beam.EventTime, size time.Duration) string {
	start := ts - (ts.Add(size) % mtime.FromDuration(size))
	b := strconv.AppendInt(nil, int64(start), 10)
	return string(binary.AppendUvarint(nil, uint64(len(b)))) + string(b)
}

// rewindowsByTime reports whether bounded input col takes this path.
func rewindowsByTime(col beam.PCollection) bool {
	ws := col.WindowingStrategy()
	return !isUnbounded(col) && ws != nil && ws.Fn != nil && ws.Fn.Kind == window.FixedWindows
}

// toGlobal checks that every element's timestamp lies in its window and
// moves the input to the global window.
func toGlobal(s beam.Scope, col beam.PCollection) (beam.PCollection, error) {
	checked, err := beam.TryParDo(s, &inWindowFn{}, col)
	if err != nil {
		return beam.PCollection{}, err
	}
	return beam.TryWindowInto(s, window.NewGlobalWindows(), checked[0])
}

// backToWindows applies the windowing of the input (its fn, trigger,
// accumulation and allowed lateness) to an output.
func backToWindows(s beam.Scope, input, out beam.PCollection) (beam.PCollection, error) {
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
	opts = append(opts, beam.AllowedLateness(time.Duration(ws.AllowedLateness)*time.Millisecond))
	return beam.TryWindowInto(s, ws.Fn, out, opts...)
}

// inWindowFn passes each element on, and fails its bundle when the
// element's timestamp lies outside its window (a DoFn upstream emitted it
// with a timestamp its window does not hold): its output would land in
// another window.
type inWindowFn struct{}

func (*inWindowFn) ProcessElement(w beam.Window, ts beam.EventTime, key beam.X, value beam.Y, emit func(beam.X, beam.Y)) error {
	if iw, ok := w.(window.IntervalWindow); ok && (ts < iw.Start || ts >= iw.End) {
		return fmt.Errorf("async: an element of key %v has timestamp %v, outside its window [%v, %v): async.ParDo on bounded input in fixed windows gives each output the window of its timestamp; emit elements with timestamps inside their windows, or window them after the step that moves their timestamps", key, ts, iw.Start, iw.End)
	}
	emit(key, value)
	return nil
}

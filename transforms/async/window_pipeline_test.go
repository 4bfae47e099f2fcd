package async_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// stampMinute gives element i the event time of minute i%Minutes.
type stampMinute struct{ Minutes int }

func (f *stampMinute) ProcessElement(i int, emit func(beam.EventTime, int)) {
	emit(mtime.FromTime(time.Unix(0, 0).Add(time.Duration(i%f.Minutes)*time.Minute)), i)
}

func one(string) int           { return 1 }
func countOf(_ int, c int) int { return c }

func init() {
	register.DoFn2x0[int, func(beam.EventTime, int)](&stampMinute{})
	register.Emitter2[beam.EventTime, int]()
	register.Function1x1(one)
	register.Function2x1(countOf)
}

// TestPipelineFixedWindows: bounded input in fixed windows runs through the
// global window and comes back to its windows by timestamp (rewindow.go);
// every element is committed once, in its own window (counted per window
// downstream).
func TestPipelineFixedWindows(t *testing.T) {
	const n, minutes, keys = 600, 4, 5
	p, s := beam.NewPipelineWithRoot()
	ints := make([]int, n)
	for i := range ints {
		ints[i] = i
	}
	stamped := beam.ParDo(s, &stampMinute{Minutes: minutes}, beam.CreateList(s, ints))
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), stamped)
	out := async.ParDo(s, &slowLabel{SleepMs: 2}, beam.ParDo(s, &keyBy{Keys: keys}, windowed), async.WithParallelism(16))
	// All outputs exactly once...
	var want []any
	for i := 0; i < n; i++ {
		k, v := keyed(i, keys)
		want = append(want, fmt.Sprintf("%s:%d", k, v))
	}
	global := window.NewGlobalWindows()
	passert.EqualsList(s, beam.WindowInto(s, global, out), want)
	// ...and each in its window: n/minutes outputs per window.
	perWindow := beam.ParDo(s, countOf, stats.Count(s, beam.ParDo(s, one, out)))
	passert.Equals(s, beam.WindowInto(s, global, perWindow), n/minutes, n/minutes, n/minutes, n/minutes)
	ptest.RunAndValidate(t, p)
}

package main

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// firstSourceUs is when the source first handed on an element, in Unix
// microseconds (0 until then): with the submission time it gives how long
// the job took to come up (the startup column; run with --lead 0 to see
// the job's own startup rather than the lead).
var firstSourceUs atomic.Int64

func sawSource() { firstSourceUs.CompareAndSwap(0, time.Now().UnixMicro()) }

// keyBy spreads values over Keys keys; on bounded input it also stamps the
// creation time when the element enters the pipeline.
type keyBy struct{ Keys int }

func (f *keyBy) ProcessElement(i int) (string, string) {
	sawSource()
	return "k" + strconv.Itoa(i%f.Keys), value(time.Now(), i)
}

// minuteOf gives element i the event time of minute i % Windows.
type minuteOf struct{ Windows int }

func (f *minuteOf) ProcessElement(k, v string, emit func(beam.EventTime, string, string)) {
	emit(mtime.FromTime(time.Unix(0, 0).Add(time.Duration(indexOf(v)%f.Windows)*time.Minute)), k, v)
}

// ticks turns each impulse of an unbounded source into PerTick elements,
// created (and stamped, as the impulse is) at the tick's scheduled time,
// for the first Ticks ticks; later ticks, the quiet suite's, emit nothing.
type ticks struct {
	PerTick, Keys, Ticks int
	StartUs              int64
	IntervalUs           int64
}

func (f *ticks) ProcessElement(ts beam.EventTime, _ []byte, emit func(string, string)) {
	sawSource()
	tick := int((ts.ToTime().UnixMicro() - f.StartUs) / f.IntervalUs)
	if tick >= f.Ticks {
		return
	}
	created := ts.ToTime()
	for j := 0; j < f.PerTick; j++ {
		i := tick*f.PerTick + j
		emit("k"+strconv.Itoa(i%f.Keys), value(created, i))
	}
}

func init() {
	register.DoFn1x2[int, string, string](&keyBy{})
	register.DoFn3x0[beam.EventTime, []byte, func(string, string)](&ticks{})
	register.DoFn3x0[string, string, func(beam.EventTime, string, string)](&minuteOf{})
	register.Emitter3[beam.EventTime, string, string]()
	register.Emitter2[string, string]()
}

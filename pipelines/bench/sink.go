package main

import (
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// output is one output as the sink saw it (32 bytes: the sink keeps one per
// element and window, allocated before the run so that the buffer does not
// grow while memory is measured).
type output struct {
	createdUs int64 // when its element was created, Unix microseconds
	winStart  int64 // its window's start, Unix milliseconds (0: global)
	latencyUs int32 // from creation to reaching the sink
	index     int32 // its element's index
	winLenMs  int32 // its window's length in milliseconds; -1: global
}

func (o output) committedUs() int64 { return o.createdUs + int64(o.latencyUs) }

// sink records each output in this process: the SDK worker runs here
// (LOOPBACK). It observes the window, so that Beam hands it an element in
// several windows once per window, and the exactly-once check sees each.
type sink struct{}

var outputs struct {
	sync.Mutex
	all []output
}

func (*sink) ProcessElement(w beam.Window, v string) {
	created := createdOf(v).UnixMicro()
	o := output{createdUs: created, latencyUs: int32(time.Now().UnixMicro() - created), index: int32(indexOf(v)), winLenMs: -1}
	if iw, ok := w.(window.IntervalWindow); ok {
		o.winStart, o.winLenMs = int64(iw.Start), int32(iw.End-iw.Start)
	}
	outputs.Lock()
	outputs.all = append(outputs.all, o)
	outputs.Unlock()
}

func init() {
	register.DoFn2x0[beam.Window, string](&sink{})
}

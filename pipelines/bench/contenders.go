package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/timers"
)

// An element's value is "createdUnixMicros/index"; every contender returns
// it unchanged after the call, so the sink can measure end-to-end latency.
func value(created time.Time, i int) string {
	return strconv.FormatInt(created.UnixMicro(), 10) + "/" + strconv.Itoa(i)
}

func createdOf(v string) time.Time {
	us, _ := strconv.ParseInt(v[:strings.IndexByte(v, '/')], 10, 64)
	return time.UnixMicro(us)
}

func indexOf(v string) int {
	i, _ := strconv.Atoi(v[strings.IndexByte(v, '/')+1:])
	return i
}

// caller makes the slow call: a sleep, or a request to the loopback service.
// Every SlowEvery-th element (by index) takes SlowX times as long.
type caller struct {
	LatencyUs int64
	SlowEvery int
	SlowX     float64
	URL       string
}

func (c caller) call(ctx context.Context, v string) error {
	d := time.Duration(c.LatencyUs) * time.Microsecond
	if c.SlowEvery > 0 && indexOf(v)%c.SlowEvery == c.SlowEvery/2 {
		d = time.Duration(float64(d) * c.SlowX)
	}
	if c.URL == "" {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return httpCall(ctx, c.URL, d)
}

// syncFn calls one element at a time: a plain ParDo.
type syncFn struct{ Caller caller }

func (f *syncFn) ProcessElement(ctx context.Context, _ string, v string, emit func(string)) error {
	if err := f.Caller.call(ctx, v); err != nil {
		return err
	}
	emit(v)
	return nil
}

// bundleFn runs calls on goroutines inside the bundle, at most P at once, and
// emits everything in FinishBundle: what Go users hand-roll today.
type bundleFn struct {
	Caller caller
	P      int

	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	out  []string
	errs []error
}

func (f *bundleFn) StartBundle(_ context.Context, _ func(string)) {
	f.sem = make(chan struct{}, f.P)
	f.out, f.errs = nil, nil
}

func (f *bundleFn) ProcessElement(ctx context.Context, _ string, v string, _ func(string)) {
	f.sem <- struct{}{}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() { <-f.sem }()
		err := f.Caller.call(context.WithoutCancel(ctx), v)
		f.mu.Lock()
		defer f.mu.Unlock()
		if err != nil {
			f.errs = append(f.errs, err)
			return
		}
		f.out = append(f.out, v)
	}()
}

func (f *bundleFn) FinishBundle(_ context.Context, emit func(string)) error {
	f.wg.Wait()
	for _, v := range f.out {
		emit(v)
	}
	if len(f.errs) > 0 {
		return fmt.Errorf("%d calls failed, first: %w", len(f.errs), f.errs[0])
	}
	return nil
}

// floorBatch is the runner's own cost of a bag-state design on bounded
// input, with no calls: each element is added to its key's bag and sets an
// end-of-window timer; the timer reads, emits and clears the bag.
type floorBatch struct {
	Pending beamstate.Bag[string]
	Drain   beamtimers.EventTime
}

func (f *floorBatch) ProcessElement(w beam.Window, sp beamstate.Provider, tp beamtimers.Provider, _ string, v string, _ func(string)) error {
	f.Drain.Set(tp, w.MaxTimestamp().ToTime())
	return f.Pending.Add(sp, v)
}

func (f *floorBatch) OnTimer(sp beamstate.Provider, _ beamtimers.Provider, _ string, _ beamtimers.Context, emit func(string)) error {
	return emitAndClear(sp, &f.Pending, emit)
}

// floorStream is the same on unbounded input: the timer is a processing-time
// timer at the key's next round of C (one of four instants), as async's.
type floorStream struct {
	Pending beamstate.Bag[string]
	Commit  beamtimers.ProcessingTime
	CNs     int64
}

func (f *floorStream) ProcessElement(sp beamstate.Provider, tp beamtimers.Provider, k string, v string, _ func(string)) error {
	c := time.Duration(f.CNs)
	f.Commit.Set(tp, timers.NextRound(time.Now(), c, timers.Phase([]byte(k), c)))
	return f.Pending.Add(sp, v)
}

func (f *floorStream) OnTimer(sp beamstate.Provider, _ beamtimers.Provider, _ string, _ beamtimers.Context, emit func(string)) error {
	return emitAndClear(sp, &f.Pending, emit)
}

func emitAndClear(sp beamstate.Provider, bag *beamstate.Bag[string], emit func(string)) error {
	vs, _, err := bag.Read(sp)
	if err != nil {
		return err
	}
	for _, v := range vs {
		emit(v)
	}
	return bag.Clear(sp)
}

// sink records each output's end-to-end latency in this process (the bench
// runs prism in LOOPBACK, so the worker is this process).
type sink struct{}

var outputs struct {
	sync.Mutex
	samples []sample
}

func (*sink) ProcessElement(v string) {
	s := sample{createdUs: createdOf(v).UnixMicro(), committedUs: time.Now().UnixMicro()}
	outputs.Lock()
	outputs.samples = append(outputs.samples, s)
	outputs.Unlock()
}

// keyBy spreads values over Keys keys; for the batch scenario it also stamps
// the creation time when the element enters the pipeline.
type keyBy struct{ Keys int }

func (f *keyBy) ProcessElement(i int) (string, string) {
	return "k" + strconv.Itoa(i%f.Keys), value(time.Now(), i)
}

// minuteOf gives element i the event time of minute i % Windows.
type minuteOf struct{ Windows int }

func (f *minuteOf) ProcessElement(k, v string, emit func(beam.EventTime, string, string)) {
	emit(mtime.FromTime(time.Unix(0, 0).Add(time.Duration(indexOf(v)%f.Windows)*time.Minute)), k, v)
}

// ticks turns each impulse of the stream scenario into PerTick elements
// created at the impulse's time.
type ticks struct {
	PerTick, Keys int
	StartUs       int64
	IntervalUs    int64
}

func (f *ticks) ProcessElement(ts beam.EventTime, _ []byte, emit func(string, string)) {
	tick := int((ts.ToTime().UnixMicro() - f.StartUs) / f.IntervalUs)
	created := ts.ToTime()
	for j := 0; j < f.PerTick; j++ {
		i := tick*f.PerTick + j
		emit("k"+strconv.Itoa(i%f.Keys), value(created, i))
	}
}

func init() {
	register.DoFn4x1[context.Context, string, string, func(string), error](&syncFn{})
	register.DoFn4x0[context.Context, string, string, func(string)](&bundleFn{})
	register.DoFn1x0[string](&sink{})
	register.DoFn6x1[beam.Window, beamstate.Provider, beamtimers.Provider, string, string, func(string), error](&floorBatch{})
	register.DoFn5x1[beamstate.Provider, beamtimers.Provider, string, string, func(string), error](&floorStream{})
	register.DoFn1x2[int, string, string](&keyBy{})
	register.DoFn3x0[beam.EventTime, []byte, func(string, string)](&ticks{})
	register.DoFn3x0[string, string, func(beam.EventTime, string, string)](&minuteOf{})
	register.Emitter3[beam.EventTime, string, string]()
	register.Emitter1[string]()
	register.Emitter2[string, string]()
}

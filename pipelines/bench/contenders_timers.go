package main

// The stateful contenders without calls: timeronly, a timer-only design
// (an end-of-window timer on bounded input; on unbounded input async's
// state and timer rules, with its planner and its keys' arrivals), and
// roundtimer, a timer per key at the next round of C.

import (
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
)

// timerOnlyBatch is a timer-only stateful design on bounded input, without
// calls: each element is added to its key's bag and sets an end-of-window
// timer; the timer emits and clears the bag. It shows what such a design
// costs prism; it is no lower bound for async, which also commits from
// ProcessElement.
type timerOnlyBatch struct {
	Pending beamstate.Bag[string]
	Drain   beamtimers.EventTime
}

func (f *timerOnlyBatch) ProcessElement(w beam.Window, sp beamstate.Provider, tp beamtimers.Provider, _ string, v string, _ func(string)) error {
	f.Drain.Set(tp, w.MaxTimestamp().ToTime())
	return f.Pending.Add(sp, v)
}

func (f *timerOnlyBatch) OnTimer(sp beamstate.Provider, _ beamtimers.Provider, _ string, _ beamtimers.Context, emit func(string)) error {
	return emitAndClear(sp, &f.Pending, emit)
}

// timerOnlyStream is the same on unbounded input, with async's state and
// timer rules and no call: the first ProcessElement of a key in a bundle
// emits and clears what its bag holds (async's commit at a key's first
// touch, where with no call every result is finished), then adds the
// element; its timer is where async's planner (timers.Cadence.Plan) puts
// it for a key whose work is all finished, from the gaps between the
// bundles that brought its elements here and the runner's pace, as async
// measures them. Its timer holds the output watermark at the earliest
// event time the key's bag holds, as async's does (a runner keeps a hold
// per timer, and its cost is part of the state and timers async pays for).
// Before its timer held the watermark it lost elements in windows other
// than the global one (prism collected a window's state once its output
// watermark passed the window's end, with what the bag still held); with
// the hold, windows have not been rerun.
type timerOnlyStream struct {
	Pending beamstate.Bag[string]
	Commit  beamtimers.ProcessingTime
	CNs     int64

	before  map[string]time.Time      // keys this bundle has committed: their last element before it
	arrived map[string]state.Arrivals // the same keys' arrivals after this bundle's first element, as Plan reads them
	inForce map[string]timers.Plan    // the timers in force at the bundle's first touch of their keys
	began   time.Time                 // when the bundle started
	holds   map[string]beam.EventTime // per key touched in this bundle: the earliest event time its bag holds
}

// timerOnlyPace is the runner's pace as timeronly sees it: one per process,
// and a bench run's worker runs one transform.
var timerOnlyPace timers.Pace

// timerOnlyArrivals is when each key's bundles brought elements to this
// process, shared by every instance of the DoFn as async's pool shares its
// keys' arrivals (state.Pool.Touch). A runner that runs a stage's bundles
// at once (embedded prism does) runs each on an instance of its own, and
// arrivals kept per instance took most elements for a newcomer's (a
// backstop at the floor, which fires before the key's next element: a
// timer bundle per element) until each instance had seen each key. A
// forgotten key's entry is reset when it comes back, not deleted: the map
// holds every key of the run (a bench run's worker sees at most the
// suite's key count).
var timerOnlyArrivals = keyArrivals{m: map[string]*keyArrival{}}

type keyArrivals struct {
	mu sync.Mutex
	m  map[string]*keyArrival
}

// keyArrival is a key's entry, as the pool keeps an owner's: its
// arrivals, its last callback, and whether its bag holds elements.
type keyArrival struct {
	arrivals   state.Arrivals
	lastActive time.Time
	holds      bool
}

// touch records a callback of key k at now (element: it brought one, which
// the caller adds to the key's bag, so the key then holds something) and
// returns the key's arrivals before and after it. Like state.Pool.Touch, it
// first forgets a key that holds nothing and has had no callback for
// longer than forget. Not copied: the pool checks at most once a second,
// so it forgets up to a second later, and it remembers a key whose work it
// evicted for longer (timeronly evicts nothing).
func (a *keyArrivals) touch(k string, now time.Time, element bool, forget time.Duration) (before, after state.Arrivals) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.m[k]
	if e == nil || (!e.holds && now.Sub(e.lastActive) > forget) {
		e = &keyArrival{}
		a.m[k] = e
	}
	before = e.arrivals
	if element {
		e.arrivals.Arrive(now)
		e.holds = true
	}
	e.lastActive = now
	return before, e.arrivals
}

// setHolds records whether k's bag holds elements (touch records it for
// an element): a key that does is not forgotten.
func (a *keyArrivals) setHolds(k string, holds bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.m[k]; e != nil {
		e.holds = holds
	}
}

func (f *timerOnlyStream) StartBundle(_ func(string)) {
	f.before = map[string]time.Time{}
	f.arrived = map[string]state.Arrivals{}
	f.inForce = map[string]timers.Plan{}
	f.holds = map[string]beam.EventTime{}
	f.began = time.Now()
}

func (f *timerOnlyStream) FinishBundle(_ func(string)) {
	plans := make([]timers.Plan, 0, len(f.inForce))
	for _, pl := range f.inForce {
		plans = append(plans, pl)
	}
	timerOnlyPace.BundleEnded(f.began, time.Now(), plans, timers.NewCadence(time.Duration(f.CNs)).GuardCap/2)
}

func (f *timerOnlyStream) ProcessElement(ts beam.EventTime, sp beamstate.Provider, tp beamtimers.Provider, k string, v string, emit func(string)) error {
	now := time.Now()
	cad := timers.NewCadence(time.Duration(f.CNs))
	last, touched := f.before[k]
	if !touched {
		if err := emitAndClear(sp, &f.Pending, emit); err != nil {
			return err
		}
		before, after := timerOnlyArrivals.touch(k, now, true, cad.Forget)
		last = before.Last
		f.before[k], f.arrived[k] = last, after
		if pl, ok := timerOnlyPace.InForce(k); ok {
			f.inForce[k] = pl
		}
	}
	// The first touch emptied the bag (and so does a timer of the key in
	// this bundle), so the hold is the earliest event time among this
	// bundle's elements of the key since.
	h, held := f.holds[k]
	if !held || ts < h {
		f.holds[k] = ts
	}
	if touched && !held {
		// A timer of the key emptied its bag earlier in this bundle: it
		// holds something again (a first touch recorded that itself).
		timerOnlyArrivals.setHolds(k, true)
	}
	a := f.arrived[k]
	facts := timers.Facts{Now: now, AtElement: true, Seen: last, Gaps: a.Gaps, Gap: a.Gap, MeanGap: a.MeanGap,
		Active: 1, BundleAge: now.Sub(f.began)}
	at := timerOnlyPace.Plan(cad, k, facts)
	f.Commit.Set(tp, at, beamtimers.WithOutputTimestamp(f.holds[k].ToTime()))
	return f.Pending.Add(sp, v)
}

func (f *timerOnlyStream) OnTimer(sp beamstate.Provider, _ beamtimers.Provider, k string, _ beamtimers.Context, emit func(string)) error {
	timerOnlyPace.Drop(k)
	delete(f.inForce, k)
	if _, touched := f.before[k]; !touched {
		// As async, which touches a key once per bundle: an element of it
		// earlier in this bundle did.
		timerOnlyArrivals.touch(k, time.Now(), false, timers.NewCadence(time.Duration(f.CNs)).Forget)
	}
	if err := emitAndClear(sp, &f.Pending, emit); err != nil {
		return err
	}
	// The bag is empty: the key's next element sets its hold afresh.
	delete(f.holds, k)
	timerOnlyArrivals.setHolds(k, false)
	return nil
}

// roundTimer is a stateful reference that shares none of async's timer
// rules: each element is added to its key's bag and sets the key's timer at
// the next round of C (counted from the Unix epoch); the timer emits and
// clears the bag. What a user writes from Beam's timer examples, labelled
// as such beside timeronly (which uses async's planner).
type roundTimer struct {
	Pending beamstate.Bag[string]
	Commit  beamtimers.ProcessingTime
	CNs     int64
}

func (f *roundTimer) ProcessElement(sp beamstate.Provider, tp beamtimers.Provider, _ string, v string, _ func(string)) error {
	f.Commit.Set(tp, timers.NextRound(time.Now(), time.Duration(f.CNs), 0))
	return f.Pending.Add(sp, v)
}

func (f *roundTimer) OnTimer(sp beamstate.Provider, _ beamtimers.Provider, _ string, _ beamtimers.Context, emit func(string)) error {
	return emitAndClear(sp, &f.Pending, emit)
}

func emitAndClear(sp beamstate.Provider, bag *beamstate.Bag[string], emit func(string)) error {
	vs, _, err := bag.Read(sp)
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		return nil
	}
	for _, v := range vs {
		emit(v)
	}
	return bag.Clear(sp)
}

func init() {
	register.DoFn6x1[beam.Window, beamstate.Provider, beamtimers.Provider, string, string, func(string), error](&timerOnlyBatch{})
	register.DoFn6x1[beam.EventTime, beamstate.Provider, beamtimers.Provider, string, string, func(string), error](&timerOnlyStream{})
	register.DoFn5x1[beamstate.Provider, beamtimers.Provider, string, string, func(string), error](&roundTimer{})
}

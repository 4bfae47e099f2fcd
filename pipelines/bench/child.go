package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/runner"
	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// runChild runs one spec's pipeline in this process and measures it.
func runChild(s spec) (result, error) {
	c := caller{LatencyUs: s.Latency.Microseconds(), SlowEvery: s.SlowEvery, SlowX: s.SlowX}
	if s.Call == "http" {
		url, stop, err := startService()
		if err != nil {
			return result{}, err
		}
		defer stop()
		c.URL = url
	}
	p, root := beam.NewPipelineWithRoot()
	keyed := input(root, s)
	outputs.samples = make([]sample, 0, s.elements()) // sized once: not grown while memory is measured
	out, err := contender(root, s, c, keyed)
	if err != nil {
		return result{}, err
	}
	beam.ParDo0(root, &sink{}, out)

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return result{}, err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	cpu0 := cpuTime()
	began := time.Now()
	if _, err := runner.Run(context.Background(), p); err != nil {
		return result{}, err
	}
	wall := time.Since(began)
	cpu := cpuTime() - cpu0
	outputs.Lock()
	samples := append([]sample(nil), outputs.samples...)
	outputs.Unlock()
	if len(samples) != s.elements() {
		return result{}, fmt.Errorf("%d outputs for %d elements", len(samples), s.elements())
	}
	res := measure(s, samples, wall, cpu, peakRSSMB())
	for _, p := range state.Default.Pools() {
		res.PeakHeld = max(res.PeakHeld, p.PeakHeld())
	}
	return res, nil
}

// input is the spec's keyed input: a bounded list, or an unbounded source
// emitting perTick elements every tick.
func input(s beam.Scope, sp spec) beam.PCollection {
	if sp.Bounded {
		ints := make([]int, sp.N)
		for i := range ints {
			ints[i] = i
		}
		keyed := beam.ParDo(s, &keyBy{Keys: sp.Keys}, beam.CreateList(s, ints))
		if sp.Windows == 0 {
			return keyed
		}
		stamped := beam.ParDo(s, &minuteOf{Windows: sp.Windows}, keyed)
		if sp.Sliding {
			return beam.WindowInto(s, window.NewSlidingWindows(time.Minute, time.Minute), stamped)
		}
		return beam.WindowInto(s, window.NewFixedWindows(time.Minute), stamped)
	}
	start := time.Now().Add(500 * time.Millisecond).Truncate(tick)
	imp := periodic.Impulse(s, start, start.Add(sp.For), tick, false)
	return beam.ParDo(s, &ticks{PerTick: sp.perTick(), Keys: sp.Keys, StartUs: start.UnixMicro(), IntervalUs: tick.Microseconds()}, imp)
}

// contender applies the spec's contender to keyed.
func contender(s beam.Scope, sp spec, c caller, keyed beam.PCollection) (beam.PCollection, error) {
	switch sp.Contender {
	case "sync":
		return beam.ParDo(s, &syncFn{Caller: c}, keyed), nil
	case "bundle":
		return beam.ParDo(s, &bundleFn{Caller: c, P: sp.P}, keyed), nil
	case "async":
		opts := []async.Option{async.WithParallelism(sp.P), async.WithCallbackFrequency(sp.C)}
		if sp.AsyncBuffer > 0 {
			opts = append(opts, async.WithMaxItemsToBuffer(sp.AsyncBuffer))
		}
		if sp.AsyncHeld > 0 {
			opts = append(opts, async.WithMaxItemsHeld(sp.AsyncHeld))
		}
		return async.TryParDo(s, &syncFn{Caller: c}, keyed, opts...)
	case "floor":
		if sp.Bounded {
			return beam.ParDo(s, &floorBatch{Pending: beamstate.MakeBagState[string]("pending"), Drain: beamtimers.InEventTime("drain")}, keyed), nil
		}
		return beam.ParDo(s, &floorStream{Pending: beamstate.MakeBagState[string]("pending"), Commit: beamtimers.InProcessingTime("commit"), CNs: int64(sp.C)}, keyed), nil
	}
	return beam.PCollection{}, fmt.Errorf("unknown contender %q", sp.Contender)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSSMB() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

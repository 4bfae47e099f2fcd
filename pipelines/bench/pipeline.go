package main

import (
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// buildPipeline lays out the one pipeline shape every contender runs in:
//
//	source → key (→ window) → Reshuffle → contender → Reshuffle → sink
//
// Prism elides each Reshuffle and makes the transform after it start a
// stage (a fusion break; elements keep their windows and timestamps), so
// every contender gets bundles of its own, the same way:
//
//   - The first Reshuffle keeps the contender out of the source's stage.
//     Fused with a periodic.Impulse, a contender's bundle did not end once
//     the source fell behind, and the rest of the stream became one bundle.
//     Prism already starts a stage at a stateful ParDo (async, timeronly);
//     the break gives passthrough, bundle and eager the same. The windowing
//     goes before it, so that it is in the source's stage for every
//     contender: after the break it would be a stage of its own before a
//     stateful ParDo and fused into a stateless one.
//   - The second gives the contender's stage an output of its own. Prism
//     v2.77.0's stage loop (stage.go, Execute) busy-spins for the whole
//     bundle when a stage has no outputs and no timers; with the sink fused
//     in, passthrough, bundle and eager (stateless, with no timers) would
//     pay that for every bundle. The sink's own stage still spins while a
//     sink bundle runs: briefly (no calls), and alike for every contender.
func buildPipeline(s beam.Scope, sp spec, c caller) error {
	keyed := sp.window().apply(s, input(s, sp))
	keyed = beam.Reshuffle(s, keyed)
	out, err := contender(s, sp, c, keyed)
	if err != nil {
		return err
	}
	beam.ParDo0(s, &sink{}, beam.Reshuffle(s, out))
	return nil
}

// input is the spec's keyed input: a bounded list, or an unbounded source
// emitting PerTick elements every tick from Lead after now.
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
		return beam.ParDo(s, &minuteOf{Windows: sp.Windows}, keyed)
	}
	// Latency counts from each tick's scheduled time, so a contender whose
	// job is not up when the source starts is charged for the wait.
	start := time.Now().Add(sp.Lead).Truncate(tick)
	imp := periodic.Impulse(s, start, start.Add(sp.For+sp.Idle), tick, false)
	return beam.ParDo(s, &ticks{PerTick: sp.perTick(), Keys: sp.Keys, Ticks: int(sp.For / tick),
		StartUs: start.UnixMicro(), IntervalUs: tick.Microseconds()}, imp)
}

// contender applies the spec's contender to keyed.
func contender(s beam.Scope, sp spec, c caller, keyed beam.PCollection) (beam.PCollection, error) {
	switch sp.Contender {
	case "sync":
		return beam.ParDo(s, &syncFn{Caller: c}, keyed), nil
	case "passthrough":
		return beam.ParDo(s, &passthroughFn{}, keyed), nil
	case "bundle":
		return beam.ParDo(s, &bundleFn{Caller: c, P: sp.P}, keyed), nil
	case "eager":
		return beam.ParDo(s, &eagerFn{Caller: c, P: sp.P}, keyed), nil
	case "async", "async-drain":
		opts := []async.Option{async.WithParallelism(sp.P), async.WithCallbackFrequency(sp.C)}
		if sp.Contender == "async-drain" {
			opts = append(opts, async.WithEndOfInputDrain())
		}
		if sp.AsyncBuffer > 0 {
			opts = append(opts, async.WithMaxItemsToBuffer(sp.AsyncBuffer))
		}
		if sp.AsyncHeld > 0 {
			opts = append(opts, async.WithMaxItemsHeld(sp.AsyncHeld))
		}
		if sp.Batch > 0 {
			opts = append(opts, async.WithBatchSize(sp.Batch))
			return async.TryBatchParDo(s, &batchCallFn{Caller: c, ItemCostUs: sp.ItemCost.Microseconds()}, keyed, opts...)
		}
		return async.TryParDo(s, &syncFn{Caller: c}, keyed, opts...)
	case "timeronly":
		if sp.Bounded {
			return beam.ParDo(s, &timerOnlyBatch{Pending: beamstate.MakeBagState[string]("pending"), Drain: beamtimers.InEventTime("drain")}, keyed), nil
		}
		return beam.ParDo(s, &timerOnlyStream{Pending: beamstate.MakeBagState[string]("pending"), Commit: beamtimers.InProcessingTime("commit"), CNs: int64(sp.C)}, keyed), nil
	case "roundtimer":
		if sp.Bounded {
			return beam.PCollection{}, fmt.Errorf("roundtimer runs on unbounded input only")
		}
		return beam.ParDo(s, &roundTimer{Pending: beamstate.MakeBagState[string]("pending"), Commit: beamtimers.InProcessingTime("commit"), CNs: int64(sp.C)}, keyed), nil
	}
	return beam.PCollection{}, fmt.Errorf("unknown contender %q", sp.Contender)
}

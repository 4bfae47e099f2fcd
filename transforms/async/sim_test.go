package async

// The runner simulator: it drives the real DoFns of the transform with
// in-memory bag state and timers and a manual clock, models the runner
// contract as Beam Go v2.77's harness meets it, and injects faults chosen by
// a seeded schedule.
//
// The runner it models (each schedule runs on each runner model, simModel,
// which says what differs and where each rule comes from):
//   - A bundle's state writes, timer sets and outputs are kept only if the
//     bundle succeeds; a failed bundle is retried (its input delivered
//     again) on a new DoFn instance: on the key's worker, or on another one
//     where the model says so.
//   - A DoFn instance whose bundle failed is dropped: never called again,
//     and never torn down (Beam Go's harness discards a failed plan and
//     calls no Teardown, ever). A successful instance takes the next bundle.
//   - Each DoFn runs in the window its input is in, and the runner collects
//     a window's state once the input watermark passes the window's end (as
//     Dataflow does): the transform's stateful DoFn runs in the global window
//     (its input carries each element's window), so nothing of it is ever
//     collected early.
//   - Time passes only as the schedule says, or while a bundle waits (real
//     elapsed time: a bundle blocked for room makes the clock move, and a
//     bundle that would wait longer than the stale period is a violation).
//
// Faults: worker restarts, bundles that fail (silently, as when an earlier
// step of the stage fails, or, on bounded input, through a panicking emit,
// as when a later one does), keys moving between workers that each have
// their own registry (a bundle of the key may still run on the old worker
// when it moves: a zombie, whose commit the runner refuses), duplicate input
// records, timers firing early, late (also by more than the stale period),
// or twice, and slow and failing calls with retries. Inputs are in the
// global window, or in fixed, sliding or session windows.
//
// With the end-of-input drain (WithEndOfInputDrain, the default here),
// escrowFn (internal/drain) keeps one state and one timer per key while the
// stream runs: the records a committed bundle of streamFn sends it are in
// flight until the runner delivers them: all at once and in order on prism,
// some at a time and in order per key on Flink, some at a time and shuffled
// on Dataflow, so that releases can come before their escrows. A bundle of
// escrowFn fails now and then, part way through its records: its state
// changes are discarded and its records delivered again to a new instance;
// so does a bundle of its drain timer, after its work. At the end of input
// the runner fires the keys' timers until every key is empty, unless the
// model's final watermark comes first (simModel); then escrowFn takes what
// is still in flight and fires its timer where it holds elements. On Flink's
// model the job's end can also hang, and outputs a checkpoint buffered can
// stay there (sim_flink_test.go).
//
// Watermarks (unbounded input; sim_watermark_test.go), each a minimum that
// never goes back, so a hold set behind one holds nothing:
//   - the input watermark: the earliest event time of the input records no
//     bundle of streamFn has committed: those not yet delivered (a source
//     holds its watermark at a record it has yet to emit), and those of a
//     bundle in progress or retried (Windmill holds Dataflow's output
//     watermark at a work item's earliest element until it commits: the doc
//     comment of WindmillTimerInternals.currentOutputWatermarkTime); once all
//     are, the source's own watermark: the end of time, or on Flink's model
//     the last record's event time until the source's final watermark
//     (simModel). A duplicate record behind the input watermark is late data,
//     as late after the transform as after a ParDo: as many of its element's
//     outputs as it has windows are let be late;
//   - streamFn's output watermark: the input watermark, and the output
//     timestamp of each key's set timer and of a timer whose firing bundle
//     has not committed: every model holds at processing-time timers
//     (simModel: prism's elementmanager.go, Dataflow's
//     WindmillTimerInternals.persistTo, Flink's
//     DoFnOperator.FlinkTimerInternals.registerTimer, each read). On
//     Flink's model a stage's output watermark does not move while a
//     bundle of it is open;
//   - escrowFn's output watermark: streamFn's, the event time of each
//     record in flight to it (Flink sends a watermark after the records
//     before it; Dataflow and prism hold at pending elements), and the
//     output timestamp of each key's drain timer (an event-time timer,
//     which every model holds at);
//   - downstream, after the flatten of the two: the lesser of them, or
//     streamFn's alone without the drain.
//
// Bounded schedules have no watermark model: a bounded stage's output
// watermark stays back until its input is done.
//
// After each schedule it checks: every input record is committed exactly
// once in each of its windows (to the output or the failure output), with
// its own timestamp and window; no output or failure record was committed
// behind the downstream watermark as it was when it reached it (a
// GroupByKey after the transform would drop it as late: counted, and a
// violation); on Flink's model, the job's end did not hang and no
// checkpoint's buffer kept outputs after the final watermark; bag
// state is empty; no pool held more than it may; a failed bundle that saw
// its failure left no work behind; Revert ran once per committed failure
// record and only after the transform; no element was called more than its
// attempts allow for the faults injected; with WithOrdered, each key's
// outputs came in input order; and once the pipeline is over and
// ReleaseAfter has passed, every worker's registry is empty and no
// goroutine is left.

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/stream"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

var (
	simSchedules = flag.Int("sim.schedules", 0, "how many seeded schedules TestSimulator runs per model (0: 1,000 with ASYNCBEAM_LONG_TESTS set, as .ci/run sets it, else 100)")
	simSeed      = flag.Uint64("sim.seed", 0, "run only this seed (with its schedule) in TestSimulator")
	simModelName = flag.String("sim.model", "", "run only this runner model (prism, dataflow, flink) in TestSimulator")
	simNoDrain   = flag.Bool("sim.nodrain", false, "run TestSimulator without WithEndOfInputDrain: Flink's model then loses records, counted, not violations")
)

// simFn is the wrapped fn of the simulator: whether an attempt is slow or
// fails is a hash of the seed, the element and the attempt number.
type simFn struct {
	Seed    uint64
	FailPct uint64
	SlowPct uint64
	// Overload makes the failures overload answers (Overloaded): they go
	// through the guard's throttle, retry budget and adaptive limit.
	Overload bool
}

func (f *simFn) roll(key string, v, attempt int, what string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d/%d/%s", f.Seed, key, v, attempt, what)
	return h.Sum64() % 100
}

// simCalls counts, per seed and element ("key:v"), the calls of the
// simulator's fn and of its Revert method.
var simCalls = struct {
	sync.Mutex
	calls, reverts map[uint64]map[string]int
}{calls: map[uint64]map[string]int{}, reverts: map[uint64]map[string]int{}}

func countCall(m map[uint64]map[string]int, seed uint64, key string, v int) int {
	simCalls.Lock()
	defer simCalls.Unlock()
	if m[seed] == nil {
		m[seed] = map[string]int{}
	}
	m[seed][fmt.Sprintf("%s:%d", key, v)]++
	return m[seed][fmt.Sprintf("%s:%d", key, v)]
}

func (f *simFn) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	countCall(simCalls.calls, f.Seed, key, v)
	attempt := Attempt(ctx)
	if f.roll(key, v, attempt, "slow") < f.SlowPct {
		select {
		case <-time.After(time.Duration(f.roll(key, v, attempt, "ms")%3) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.roll(key, v, attempt, "fail") < f.FailPct {
		err := fmt.Errorf("simulated failure of %s:%d attempt %d", key, v, attempt)
		if f.Overload {
			return Overloaded(err)
		}
		return err
	}
	emit(fmt.Sprintf("%s:%d", key, v))
	return nil
}

// Revert counts its calls: it must run only on committed failure records.
func (f *simFn) Revert(_ context.Context, key string, v int, _ error) error {
	countCall(simCalls.reverts, f.Seed, key, v)
	return nil
}

// simBatchFn is simFn's batch form (BatchParDo): an element's attempt is
// its count of calls so far; a request is slow, or fails whole, as its first
// element's roll says, and each element fails on its own roll.
type simBatchFn struct{ simFn }

func (f *simBatchFn) ProcessBatch(ctx context.Context, keys []string, values []int, emit func(int, string)) ([]error, error) {
	attempts := make([]int, len(keys))
	for i := range keys {
		attempts[i] = countCall(simCalls.calls, f.Seed, keys[i], values[i])
	}
	k0, v0, a0 := keys[0], values[0], attempts[0]
	if f.roll(k0, v0, a0, "slow") < f.SlowPct {
		select {
		case <-time.After(time.Duration(f.roll(k0, v0, a0, "ms")%3) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	failure := func(err error) error {
		if f.Overload {
			return Overloaded(err)
		}
		return err
	}
	if f.roll(k0, v0, a0, "whole") < f.FailPct/2 {
		return nil, failure(fmt.Errorf("simulated failure of a request of %d from %s:%d", len(keys), k0, v0))
	}
	errs := make([]error, len(keys))
	for i := range keys {
		if f.roll(keys[i], values[i], attempts[i], "fail") < f.FailPct {
			errs[i] = failure(fmt.Errorf("simulated failure of %s:%d attempt %d", keys[i], values[i], attempts[i]))
			continue
		}
		emit(i, fmt.Sprintf("%s:%d", keys[i], values[i]))
	}
	return errs, nil
}

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&simFn{})
	beam.RegisterType(reflect.TypeOf((*simBatchFn)(nil)).Elem())
}

// simAction is one step of a schedule.
type simAction struct {
	Kind string
	A, B int
}

func (a simAction) String() string { return fmt.Sprintf("%s(%d,%d)", a.Kind, a.A, a.B) }

var simKinds = []string{"deliver", "deliver", "deliver", "fire", "fire", "fire", "advance", "wait", "dup", "restart", "move", "failnext", "twice", "lag"}

// simWindowKinds are the input windowings a schedule draws from.
var simWindowKinds = []string{"global", "fixed", "sliding", "sessions"}

// simModel is a runner's rules where runners differ, for the unbounded
// path (bounded schedules run alike on every model). Each rule says where
// it comes from: "read" in a runner's sources (at the version named),
// "run" on that runner, "inferred" from what was read, "assumed" where
// nothing was found. Flink's were read for issue 54 at the commits the
// project's Flink notes name (DoFnOperator and runners-core's
// StatefulDoFnRunner at 94530b19, Beam 2.75.0-SNAPSHOT;
// ExecutableStageDoFnOperator at 283335fd, Beam 2.7x, whose flushData a
// Beam 2.5x copy has alike), and run on Beam 2.67's Flink runner (Flink
// 1.19); Dataflow's were read in its Java worker at the commits named.
//   - prism v2.77 (engine/elementmanager.go; read): a bag reads in the order
//     it was written; state is collected on the output watermark, which a
//     commit timer's hold keeps back, so pending timers fire after the input
//     ends until the keys are empty. A processing-time timer's hold enters the
//     stage's watermark holds like an event-time timer's (PersistBundle:
//     processingTimeTimers.Persist returns the changed holds, added to
//     watermarkHolds). Records to escrowFn arrive all at once, in order (the
//     simulator's choice). prism fails the job on a failed bundle (execute.go:
//     FailBundle); the simulator retries it instead, which asks more of the
//     transform. No bundle is split: prism's splits lose a split bundle's
//     keys' state (v2.78.0, run; runner/nosplit), and the transform turns
//     them off, so the model has none.
//   - Dataflow (Runner v2, the only one for Go: its runner harness is not
//     public, so the Java worker's code stands for Windmill's rules, which
//     both share; inferred): bag order is not promised (read here last entry
//     first); a failed work item is retried, here on another worker where the
//     key then stays (assumed). A user timer of either domain holds the output
//     watermark at its output timestamp until it fires or is deleted
//     (WindmillTimerInternals.persistTo, needsWatermarkHold; read at
//     011982eb4744). Processing-time timers are not dropped when the input
//     ends or on drain, and fire at their time (inferred): the worker does not
//     wrap user DoFns in runners-core's StatefulDoFnRunner
//     (UserParDoFnFactory.createDefault, SimpleDoFnRunnerFactory.createRunner;
//     read at 039f9a1b5b0e and 078fcdedcbeb), SimpleParDoFn.processUserTimer
//     delivers a timer with no lateness check (read at 01d83b87d4c4),
//     StreamingModeExecutionContext.getNextFiredUserTimer hands on every timer
//     Windmill fires (read at 00e5fbf40b5e), and Beam issue 32727 reports
//     processing-time timers firing after their window expired, on Runner v2
//     too (read); nothing found says a drain fires them early. So keys drain
//     as on prism. The global window's state has no collection timer
//     (SimpleParDoFn.registerStateCleanup, without OnWindowExpiration; read at
//     01d83b87d4c4). The drain's event-time timer fires once the watermark
//     reaches the end of time, at a drain or the end of a bounded source (Beam
//     issues 17879 and 20203, PR 33037; read; for Go on Runner v2, inferred).
//     Records to escrowFn arrive some at a time and in any order (a shuffle
//     between two stages; assumed).
//
// Flink's portable runner, in streaming mode (the job is sent
// streaming=true, a positive shutdown_sources_after_idle_ms and
// finish_bundle_before_checkpointing=true; the last two are schedule
// parameters, simFlinkOptions). Its stage is an ExecutableStageDoFnOperator,
// which wraps the SDK's runner in runners-core's StatefulDoFnRunner:
//   - Holds: a timer of either domain holds the stage's output watermark at
//     its output timestamp until it fires or is deleted
//     (DoFnOperator.FlinkTimerInternals.registerTimer adds a hold for every
//     domain since BEAM-14265, Beam 2.41; read at 2.75.0-SNAPSHOT).
//   - End of input: the source's final watermark follows its last record by
//     finalRounds rounds of timers (a choice of the simulator's). Once the
//     input watermark has passed the global window's end, a processing-time
//     timer that fires is ignored (StatefulDoFnRunner.onTimer, isLate; read at
//     2.75.0-SNAPSHOT), its hold released first (DoFnOperator.fireTimer calls
//     onFiredOrDeletedTimer before the runner's onTimer; read); run: Flink
//     logged "Firing timer" and the Go OnTimer never ran. What the keys hold
//     then is never committed by streamFn: the drain (an event-time timer,
//     which onTimer never takes for late) runs it; without it (noDrain) it is
//     lost (lostAtEnd), as the run lost 20 to 80 of 200 outputs. The keys'
//     state goes once the output watermark passes the global window's end
//     (DoFnOperator.maybeEmitWatermark calls clearGlobalState; read).
//   - Shutdown: the source's task ends shutdown_sources_after_idle_ms after it
//     started (ImpulseSourceFunction.run emits the impulse and the final
//     watermark, then waits that long; read in a Beam 2.6x copy), at once with
//     0. Then the stage's ExecutableStageDoFnOperator.flushData loops while
//     its output watermark is below the end of time, and fires processing-time
//     timers only for a splittable DoFn (read at 2.7x): a processing-time
//     timer still set then holds the watermark for ever, a hang (run: 100%
//     CPU, never ends). Timers that fall due before the task ends fire and are
//     ignored, as above.
//   - Bundles: a bundle closes at 1,000 elements or 1 s after it started
//     (DoFnOperator.checkInvokeFinishBundleByCount and
//     checkInvokeFinishBundleByTime, which do nothing unless streaming=true;
//     read at 2.75.0-SNAPSHOT), at a checkpoint, or when the stage's output
//     watermark reaches the end of time (maybeEmitWatermark finishes it first;
//     read). Its outputs leave when it closes
//     (SdkHarnessDoFnRunner.finishBundle emits the SDK worker's results;
//     read), and the stage's output watermark does not move while it is open
//     (maybeEmitWatermark returns while a bundle is started; read). The
//     simulator's bundles of a stage within that second make one (never
//     1,000 elements: the schedules have fewer), in one subtask per stage (a
//     key never changes subtask on Flink, whichever worker runs it here);
//     each still commits its own state.
//   - Checkpoints finish the open bundle. With
//     finish_bundle_before_checkpointing, before their barrier
//     (DoFnOperator.prepareSnapshotPreBarrier; read at 2.75.0-SNAPSHOT): its
//     outputs leave, nothing is buffered. Without, in snapshotState, with the
//     output buffer open (DoFnOperator.BufferedOutputManager; read): its
//     outputs wait in operator state until the subtask starts its next bundle
//     (checkInvokeStartBundle, for an element or a timer, an ignored one too)
//     or a higher watermark arrives (processWatermark1): both call
//     flushBuffer, nothing else does (read), and the stage's watermark may
//     pass them meanwhile. After its final watermark a subtask that gets no
//     further element or timer keeps them until flushData, behind the final
//     watermark, or for ever (run: an Impulse stage held its one output to the
//     end of input, 0 of 200 outputs).
//   - Records of streamFn to escrowFn arrive in order per key, some at a time:
//     a redistributing exchange keeps the order of each pair of sending and
//     receiving subtasks (Flink's documentation, "Parallel Dataflows"; read),
//     a key's records all come from the subtask that owns the key, and a
//     watermark follows the records sent before it.
//   - Restores: a worker restart is a task failure, which restores the job
//     from its last completed checkpoint (sim_checkpoint_test.go; Flink's
//     failover, not a bundle retry: ExecutableStageDoFnOperator keeps no
//     bundle to retry; read); checkpoints come at every other wait or advance
//     action, and, drawn, after each round of timers, ignored timer and drain
//     bundle at the end of input. Flink's Reshuffle is a rebalance
//     (FlinkStreamingPortablePipelineTranslator's translateReshuffle; read),
//     so the revert step runs on stable input (BufferingDoFnRunner releases a
//     stage's input once the checkpoint holding it completes, when a ParDo in
//     it requires stable input; read), and Revert at each checkpoint;
//     unstableRevert shows what happens without.
//   - Bag order as Dataflow's (assumed). Bundle failures are retried as on the
//     other models, which asks more of the transform.
type simModel struct {
	name string
	// shuffledBags: bags read in an order other than the writes'.
	shuffledBags bool
	// retryElsewhere: a failed bundle's retry runs on another worker, and
	// its key stays there.
	retryElsewhere bool
	// escrowInParts: the records in flight to escrowFn arrive some at a
	// time, across later bundles of the stream (feedEscrow); shuffledEscrow:
	// in any order, not in the order a key sent them.
	escrowInParts, shuffledEscrow bool
	// dropsLateTimers: processing-time timers are ignored once the input
	// watermark reaches the end of time (see finish), and the source's
	// shutdown can hang the job (finalWatermark).
	dropsLateTimers bool
	// timedBundles: a stage's bundles stay open for a second, send their
	// outputs when they close, and are finished by checkpoints
	// (sim_flink_test.go).
	timedBundles bool
	// restores: a worker restart restores the job from its last
	// completed checkpoint (sim_checkpoint_test.go).
	restores bool
}

var simModels = []simModel{
	{name: "prism"},
	{name: "dataflow", shuffledBags: true, retryElsewhere: true, escrowInParts: true, shuffledEscrow: true},
	{name: "flink", shuffledBags: true, escrowInParts: true, dropsLateTimers: true, timedBundles: true, restores: true},
}

// simSchedule is everything a seed decides.
type simSchedule struct {
	seed           uint64
	batch, ordered bool
	// windows is the input's windowing: global, fixed (4 ms), sliding (8 ms
	// every 4 ms: two windows per element) or sessions (a gap of 3 ms).
	windows                string
	elements, keys, worker int
	parallelism, buffer    int
	held                   int
	failPct, slowPct       uint64
	// overload: failures are overload answers; adaptive: the pool's slots
	// follow an adaptive limit from 1 to the parallelism (the guard in the
	// pool, issue 21).
	overload, adaptive bool
	// cache: a result cache of 8 results per worker (WithCache, issue 22):
	// a duplicate record, or a record redelivered after a failed bundle,
	// may take a result without a call, or wait for its copy's call.
	cache bool
	// requests: the fn is a batch fn (BatchParDo, issue 22) with batches
	// of up to batchSize, gathered for 0 or 1 ms, across keys or per key;
	// a request may fail whole, and elements of one fail on their own.
	requests     bool
	batchSize    int
	batchWait    time.Duration
	batchesByKey bool
	actions      []simAction
	// model is the runner the schedule runs on; finalRounds how many
	// rounds of timers a runner whose final watermark drops timers
	// (simModel.dropsLateTimers) fires after the input ends and before it;
	// flink the job's options on the Flink model.
	model       simModel
	finalRounds int
	flink       simFlinkOptions
	// noDrain: without WithEndOfInputDrain (internal/drain); the records a final
	// watermark leaves in the keys' bags are then lost (lostAtEnd).
	noDrain bool
	// ignoreEscrowHold breaks the watermark model on purpose: escrowFn's
	// timer holds nothing, so that a test shows the late-output check can
	// fail (TestSimulatorLateOutputs).
	ignoreEscrowHold bool
	// unstableRevert breaks the Flink model's stable input on purpose: the
	// revert step runs on failure records as they are committed, not once
	// a checkpoint holds them, so that a test shows what a restore then
	// does (TestSimulatorRevertOnFlink).
	unstableRevert bool
}

func newSchedule(seed uint64) simSchedule {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := simSchedule{
		seed: seed, batch: r.IntN(3) == 0,
		elements: 5 + r.IntN(40), keys: 1 + r.IntN(5), worker: 1 + r.IntN(2),
		parallelism: 1 + r.IntN(4), failPct: uint64(r.IntN(40)), slowPct: uint64(r.IntN(50)),
	}
	s.buffer = s.parallelism + r.IntN(4)
	// Drawn apart from the generator, so that adding them kept the older
	// draws of every seed as they were.
	s.ordered = (seed/7919)%2 == 0
	s.held = s.buffer + int(seed/7919/2%4)
	s.windows = simWindowKinds[(seed/7919/16)%4]
	s.overload = (seed/7919/64)%2 == 0
	s.adaptive = (seed/7919/128)%2 == 0
	s.cache = (seed/7919/256)%2 == 0
	s.requests = (seed/7919/512)%2 == 0
	s.batchSize = 1 + int(seed/7919/1024%5)
	s.batchWait = time.Duration(seed/7919/8192%2) * time.Millisecond
	s.batchesByKey = (seed/7919/16384)%2 == 0
	s.model, s.flink = simModels[0], simFlinkDefaults
	s.finalRounds = int((seed*0x9e3779b97f4a7c15)>>32) % 3 // drawn apart, as the flags above
	for i := 0; i < 20+r.IntN(60); i++ {
		s.actions = append(s.actions, simAction{Kind: simKinds[r.IntN(len(simKinds))], A: r.IntN(1000), B: r.IntN(1000)})
	}
	return s
}

// simElem is one input record: a value of a key. A duplicate record has the
// value of an earlier one.
type simElem struct {
	key string
	v   int
}

func (e simElem) name() string { return fmt.Sprintf("%s:%d", e.key, e.v) }

// ts is the element's event time: its value, in ms after the second 1.
func (e simElem) ts() beam.EventTime { return mtime.FromMilliseconds(int64(1000 + e.v)) }

// windows are the element's windows under the schedule's windowing (the
// windows WindowInto gives its timestamp).
func (e simElem) windows(kind string) []typex.Window {
	ts := e.ts()
	switch kind {
	case "fixed":
		return assignedWindows(window.FixedWindows, 4*time.Millisecond, 0, 0, ts)
	case "sliding":
		return assignedWindows(window.SlidingWindows, 8*time.Millisecond, 4*time.Millisecond, 0, ts)
	case "sessions":
		return assignedWindows(window.Sessions, 0, 0, 3*time.Millisecond, ts)
	}
	return []typex.Window{window.GlobalWindow{}}
}

// simInput is one element as the transform's DoFn receives it: in the
// global window, its value carried with its window (carryFn's output) when
// the input is windowed.
type simInput struct {
	simElem
	win string
}

func (w *simWorld) inputsOf(e simElem) []simInput {
	var out []simInput
	for _, win := range e.windows(w.s.windows) {
		out = append(out, simInput{e, windowText(win)})
	}
	return out
}

// value is what the DoFn's ProcessElement receives as the value.
func (w *simWorld) value(in simInput) any {
	if w.s.windows == "global" {
		return in.v
	}
	vb, err := wrapped.Encode(beam.NewElementEncoder(reflect.TypeOf(0)), in.v)
	if err != nil {
		panic(err)
	}
	return windowed{Window: in.win, Value: vb}
}

// commitRecord is one output or failure record the runner committed: the
// element ("key:v") and window it belongs to, and its timestamp.
type commitRecord struct {
	name, win string
	ts        beam.EventTime
	failure   *Failure
}

// simWorld is what both worlds share: the schedule, the clock, the input
// and everything the runner committed.
type simWorld struct {
	t     *testing.T
	s     simSchedule
	clock *timers.Manual
	// registries are the workers' registries, dead or alive (newRegistry).
	registries []*state.Registry
	base       worker.Core // configured and set up; each DoFn instance starts from it
	input      []simElem
	commits    []commitRecord
	problems   []string
	// lostAtEnd counts, by element and window, the records a runner's final
	// watermark left uncommitted (streamWorld.finalWatermark); lost is how
	// many check found so.
	lostAtEnd map[[2]string]int
	lost      int
	// drained counts the records the end-of-input drain committed;
	// drainBundlesFailed its bundles (escrowFn's timer) failed on purpose
	// (streamWorld.drain).
	drained, drainBundlesFailed int
	// rf is the revert step's instance (revertUpTo): it has reverted the
	// failure records in commits[:reverted], stepReverts of them by
	// element.
	rf          *revertFn
	reverted    int
	stepReverts map[string]int
}

func (w *simWorld) violation(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

func newSimWorld(t *testing.T, s simSchedule) *simWorld {
	w := &simWorld{t: t, s: s, clock: timers.NewManual(time.Unix(1_900_000_000, 0)), lostAtEnd: map[[2]string]int{}, stepReverts: map[string]int{}}
	fn := simFn{Seed: s.seed, FailPct: s.failPct, SlowPct: s.slowPct, Overload: s.overload}
	spec, _, err := wrapped.Inspect(&fn, reflect.TypeOf(""), reflect.TypeOf(0))
	if s.requests {
		spec, _, err = wrapped.InspectBatch(&simBatchFn{fn}, reflect.TypeOf(""), reflect.TypeOf(0))
	}
	if err != nil {
		t.Fatal(err)
	}
	w.base = worker.Core{Config: terms.Config{
		ID: uuid.NewString(), User: spec, KeyType: beam.EncodedType{T: reflect.TypeOf("")}, ValueType: beam.EncodedType{T: reflect.TypeOf(0)},
		Parallelism: s.parallelism, Buffer: s.buffer, Held: s.held, CallbackFrequency: time.Second,
		MaxAttempts: 3, Backoff: FixedBackoff(time.Millisecond), HasFailures: true, Ordered: s.ordered,
		Carried: s.windows != "global", OutputType: &beam.EncodedType{T: reflect.TypeOf("")},
		Protect: terms.Protection{BudgetShare: 0.1}, Drain: !s.noDrain,
	}}
	w.base.SetClock(w.clock)
	w.base.SetWaitPeriod(2 * time.Millisecond)
	if s.adaptive {
		w.base.Protect.AdaptiveMin, w.base.Protect.AdaptiveMax = 1, s.parallelism
	}
	if s.cache {
		w.base.Cache = &terms.CacheSpec{Size: 8, TTL: time.Minute}
	}
	if s.requests {
		w.base.Batch = &terms.BatchSpec{Size: s.batchSize, Wait: s.batchWait, PerKey: s.batchesByKey}
	}
	for i := 0; i < s.elements; i++ {
		w.input = append(w.input, simElem{fmt.Sprintf("k%d", i%s.keys), i})
	}
	return w
}

// newRegistry is a worker's registry, on the simulated clock.
func (w *simWorld) newRegistry() *state.Registry {
	r := state.NewRegistry()
	r.Now = w.clock.Now
	w.registries = append(w.registries, r)
	return r
}

// paced says whether a worker's guard paces attempts right now: they wait
// on the simulated clock (guard.Config.Sleep), which must move for them.
func (w *simWorld) paced() bool {
	for _, r := range w.registries {
		for _, pool := range r.Pools() {
			if g, ok := pool.Gate().(*worker.Guarded); ok && g.Waiting() > 0 {
				return true
			}
		}
	}
	return false
}

// instance is a new DoFn instance's core on a worker: set up, as the
// harness does for every instance it makes.
func (w *simWorld) instance(reg *state.Registry) worker.Core {
	c := w.base
	c.SetRegistry(reg)
	if err := c.Setup(context.Background()); err != nil {
		w.t.Fatal(err)
	}
	return c
}

// collector gathers what one bundle emits, checking each output's timestamp
// and window against its element's.
type collector struct {
	w        *simWorld
	commits  []commitRecord
	problems []string
	// panicAt makes the emit of that many outputs panic, as an emit does
	// when a later step of the stage fails (-1: never).
	panicAt int
	// escrows are the records for the end-of-input drain (internal/drain), with
	// their timestamps and keys.
	escrows    []simRecord
	escrowKeys []string
}

func (c *collector) escrow(ts beam.EventTime, key beam.X, rec []byte) {
	c.escrows, c.escrowKeys = append(c.escrows, simRecord{ts: ts, rec: rec}), append(c.escrowKeys, key.(string))
}

func (w *simWorld) collector() *collector { return &collector{w: w, panicAt: -1} }

func (c *collector) emit(ts beam.EventTime, z beam.Z) {
	if c.panicAt == 0 {
		panic("a later step of the stage failed")
	}
	c.panicAt--
	name, win := "", ""
	switch o := z.(type) {
	case string:
		name = o
	case windowed:
		v, err := wrapped.Decode(beam.NewElementDecoder(reflect.TypeOf("")), o.Value)
		if err != nil {
			c.problems = append(c.problems, fmt.Sprintf("output %v does not decode: %v", o, err))
			return
		}
		name, win = v.(string), o.Window
	default:
		c.problems = append(c.problems, fmt.Sprintf("output of type %T", z))
		return
	}
	c.check(name, win, ts)
	c.commits = append(c.commits, commitRecord{name: name, win: win, ts: ts})
	emitted.Add(1)
}

func (c *collector) fail(ts beam.EventTime, fr Failure) {
	name := fr.KeyText + ":" + fr.ValueText
	c.check(name, fr.Window, ts)
	c.commits = append(c.commits, commitRecord{name: name, win: fr.Window, ts: ts, failure: &fr})
	emitted.Add(1)
}

// check: an output or failure record of element name carries its timestamp,
// and one of its windows.
func (c *collector) check(name, win string, ts beam.EventTime) {
	e := c.w.input[indexOfOutput(name)]
	if ts != e.ts() {
		c.problems = append(c.problems, fmt.Sprintf("output %s has timestamp %v, want its element's %v", name, ts, e.ts()))
	}
	for _, in := range c.w.inputsOf(e) {
		if in.win == win {
			return
		}
	}
	c.problems = append(c.problems, fmt.Sprintf("output %s is in window %q, not one of its element's", name, win))
}

// indexOfOutput reads v from an output "key:v".
func indexOfOutput(o string) int {
	var v int
	if i := strings.LastIndexByte(o, ':'); i >= 0 {
		fmt.Sscanf(o[i+1:], "%d", &v)
	}
	return v
}

// check checks the commits against the records delivered: each record once
// in each of its windows (delivered counts the records of each element
// name), then the calls.
func (w *simWorld) check(delivered map[string]int) {
	got := map[[2]string]int{}
	for _, c := range w.commits {
		got[[2]string{c.name, c.win}]++
	}
	for _, e := range w.input {
		for _, in := range w.inputsOf(e) {
			at := [2]string{e.name(), in.win}
			n, want, lost := got[at], delivered[e.name()], w.lostAtEnd[at]
			switch {
			case lost > 0 && n+lost == want:
				w.lost += lost // the runner's final watermark dropped them (simModel)
			case n != want:
				w.violation("element %s in window %q committed %d times, want %d (one per record; %d lost at the final watermark)", e.name(), in.win, n, want, lost)
			}
		}
	}
	if w.s.ordered {
		w.checkOrder(delivered)
	}
	w.checkCalls(delivered)
}

// checkOrder checks that each key's outputs came in the order its elements
// were delivered (values of a key are delivered in increasing order); the
// outputs of a value delivered more than once (a duplicate record comes
// later, out of that order) are left out.
func (w *simWorld) checkOrder(delivered map[string]int) {
	last := map[string]int{}
	for _, c := range w.commits {
		if c.failure != nil || delivered[c.name] > 1 {
			continue
		}
		e := w.input[indexOfOutput(c.name)]
		if prev, ok := last[e.key]; ok && e.v < prev {
			w.violation("ordered: key %s committed %d after %d", e.key, e.v, prev)
		}
		last[e.key] = e.v
	}
}

// checkCalls checks what the schedule cost in calls: the revert step that
// follows the transform, run on the committed failure records (revertUpTo:
// here, for those no checkpoint of the model ran it on; on the Flink model
// that is the stable-input drain, which runner.RunStableRevert switches on:
// without it Flink's drain leaves them unrun), reverts each once,
// and Revert never ran elsewhere (inside the transform); and no element was
// called more than MaxAttempts times per record and window for each fault
// injected, plus one.
func (w *simWorld) checkCalls(delivered map[string]int) {
	w.revertUpTo(len(w.commits))
	simCalls.Lock()
	calls := maps.Clone(simCalls.calls[w.s.seed]) // a copy: a call left running may still count
	reverted := maps.Clone(simCalls.reverts[w.s.seed])
	simCalls.Unlock()
	failed := map[string]int{}
	for _, c := range w.commits {
		if c.failure != nil {
			failed[c.name]++
		}
	}
	names := maps.Clone(failed)
	maps.Copy(names, reverted)
	maps.Copy(names, w.stepReverts)
	for name := range names {
		if reverted[name] != w.stepReverts[name] {
			w.violation("Revert ran %d times for element %s, and the revert step took %d of its failure records (Revert ran inside the transform, before the failure was committed, or the step did not reach it)", reverted[name], name, w.stepReverts[name])
		}
		if reverted[name] != failed[name] {
			w.violation("element %s has %d committed failure record(s) and was reverted %d times, want one revert per record", name, failed[name], reverted[name])
		}
	}
	faults := 0
	for _, a := range w.s.actions {
		switch a.Kind {
		case "restart", "move", "failnext", "twice":
			faults++
		}
	}
	if w.s.model.dropsLateTimers && !w.s.noDrain {
		faults++ // the drain calls again what the final watermark left
	}
	faults += w.drainBundlesFailed
	windows := len(w.input[0].windows(w.s.windows))
	for name, n := range calls {
		if limit := 3 * delivered[name] * windows * (1 + faults); n > limit { // MaxAttempts is 3
			w.violation("element %s was called %d times, more than %d (MaxAttempts x records x windows x (1 + %d faults))", name, n, limit, faults)
		}
	}
}

// release ends the pipeline for the workers: once ReleaseAfter has passed
// without a lookup, each registry lets go of the transform's pool and
// values, and then no goroutine of the transform is left. (Beam Go never
// calls Teardown; nothing depends on it.)
func (w *simWorld) release(registries []*state.Registry, baseline int) {
	for _, r := range registries { // calls left running by failed bundles end on their own
		for _, p := range r.Pools() {
			for deadline := time.Now().Add(10 * time.Second); p.Unfinished() > 0 && time.Now().Before(deadline); {
				if w.paced() { // a call holding its slot, or a request paced, waits on the simulated clock
					w.clock.Advance(100 * time.Millisecond)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	w.clock.Advance(state.ReleaseAfter + time.Minute)
	for i, r := range registries {
		if _, err := r.ReleaseIdle(w.clock.Now().Add(-state.ReleaseAfter)); err != nil {
			w.violation("worker %d: releasing its registry: %v", i, err)
		}
		if n := r.Len(); n != 0 {
			w.violation("worker %d still holds %d transforms after the pipeline ended and ReleaseAfter passed", i, n)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			r.Reset(ctx)
			cancel()
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		w.violation("%d goroutines left after the workers let go of the transform (baseline %d)", n, baseline)
	}
}

// simKey is the committed state of one key on the runner (unbounded input):
// its bags and timer, in the global window, where the transform's stateful
// DoFn runs whatever the input's windowing (the runner's collection of
// window state at the input watermark never reaches it).
type simKey struct {
	key   string
	bags  map[string][]any // committed bag state, by bag
	timer *time.Time       // the set processing-time timer
	// hold is the output timestamp of the set timer, or of the timer that
	// fired in a bundle not yet committed (the runner keeps a firing
	// timer's hold until then); nil: none.
	hold  *mtime.Time
	owner int
	// escrow is escrowFn's state of the key (internal/drain), and the records
	// in flight to it.
	escrow simEscrow
}

// elements counts the elements the key's committed bags hold.
func (k *simKey) elements() int {
	return (&memState{bags: k.bags}).size()
}

// streamWorker is one worker process: its registry and its DoFn instances.
type streamWorker struct {
	registry *state.Registry
	fns      []*streamFn
}

// streamWorld runs unbounded input through streamFn.
type streamWorld struct {
	*simWorld
	workers  []*streamWorker
	keys     map[string]*simKey
	next     int // next input record to deliver
	failNext bool
	// zombie: the next bundle is a zombie's (apply's move), whose commit
	// the runner refuses; zombies counts them.
	zombie    bool
	zombies   int
	delivered map[string]int // records delivered, by element name
	wm        simWatermarks
	// escrowFn is the instance that takes the records in flight to escrowFn
	// (feedEscrow); rng picks which of them arrive, and in what order.
	escrowFn *escrowFn
	rng      *rand.Rand
	// escrowBundlesFailed counts the bundles of escrowFn failed on
	// purpose (feedEscrow).
	escrowBundlesFailed int
	// lastCheckpoint is where a restore goes back to, on a model with
	// restores; restores counts them (sim_checkpoint_test.go).
	lastCheckpoint *simCheckpoint
	restores       int
	// flink is the Flink model's operators, its source and what they did
	// (sim_flink_test.go); zero on the other models.
	flink simFlink
}

func newStreamWorld(t *testing.T, s simSchedule) *streamWorld {
	w := &streamWorld{simWorld: newSimWorld(t, s), keys: map[string]*simKey{}, delivered: map[string]int{},
		rng: rand.New(rand.NewPCG(s.seed, 0x5eed))}
	for i := 0; i < s.worker; i++ {
		wk := &streamWorker{registry: w.newRegistry()}
		wk.fns = []*streamFn{w.newStreamFn(wk), w.newStreamFn(wk)}
		w.workers = append(w.workers, wk)
	}
	for i, e := range w.input {
		if w.keys[e.key] == nil {
			w.keys[e.key] = &simKey{key: e.key, owner: i % s.worker}
		}
	}
	w.startWatermarks()
	w.startFlink()
	w.startCheckpoints()
	return w
}

func (w *streamWorld) newStreamFn(wk *streamWorker) *streamFn {
	return newStreamFn(w.instance(wk.registry))
}

// bundle runs fn on an instance of the keys' owner (they share it) against
// a copy of each key's committed state, then commits their state, timers
// and outputs together, unless a fault fails the bundle: then everything it
// did for every key is discarded, its instance is dropped, and it runs
// again on a new one (on another worker, with its keys, where the model
// says so). records are the input records the bundle delivers: they hold
// the input watermark until it commits. Its outputs must not be behind the
// downstream watermark as it was before it committed (checkLate); its
// escrow records go in flight to escrowFn, which may take some at once. On
// Flink's model both leave when the subtask's bundle closes (emit).
func (w *streamWorld) bundle(keys []string, records []simElem, fn func(f *streamFn, sts []*memState, tms []*memTimers, cs []*collector) error) {
	owner := w.keys[keys[0]].owner
	for _, key := range keys[1:] {
		if w.keys[key].owner != owner {
			w.violation("simulator: a bundle of keys %v on two workers", keys)
			return
		}
	}
	w.startBundle(w.streamOp())
	wm := w.watermark()
	for try := 0; ; try++ {
		wk := w.workers[owner]
		inst := try % len(wk.fns)
		sts, tms, cs := make([]*memState, len(keys)), make([]*memTimers, len(keys)), make([]*collector, len(keys))
		for i, key := range keys {
			sts[i] = &memState{bags: copyBags(w.keys[key].bags), reversed: w.s.model.shuffledBags}
			tms[i], cs[i] = &memTimers{}, w.collector()
		}
		err := fn(wk.fns[inst], sts, tms, cs)
		for i, c := range cs {
			w.problems = append(w.problems, c.problems...)
			for _, cm := range c.commits {
				if w.input[indexOfOutput(cm.name)].key != keys[i] {
					w.violation("output %s emitted by a callback of key %s", cm.name, keys[i])
				}
			}
			for _, k := range c.escrowKeys {
				if k != keys[i] {
					w.violation("an escrow record of key %s sent by a callback of key %s", k, keys[i])
				}
			}
		}
		if w.zombie {
			// The runner refuses the commit of a bundle whose key has
			// moved: everything it did is discarded, and nothing runs
			// again here. The bundle itself succeeded, so the harness
			// keeps its instance, unless it failed.
			w.zombie = false
			w.zombies++
			if err != nil {
				wk.fns[inst] = w.newStreamFn(wk)
			}
			return
		}
		injected := w.failNext && try == 0
		if injected || err != nil {
			w.failNext = false
			wk.fns[inst] = w.newStreamFn(wk) // the harness drops a failed bundle's instance
			if w.s.model.retryElsewhere {
				owner = (owner + 1) % len(w.workers)
				for _, key := range keys {
					w.keys[key].owner = owner
				}
			}
			if try < 5 {
				continue
			}
			w.violation("bundle for keys %v keeps failing: %v", keys, err)
			return
		}
		var out simOutputs
		for i, key := range keys {
			k := w.keys[key]
			k.bags = sts[i].bags
			set, isSet := tms[i].lastSet()
			if fire, ok := tms[i].take(); ok {
				k.timer = &fire
			}
			switch {
			case isSet && !set.Clear:
				k.hold = &set.HoldTimestamp
			case k.timer == nil: // fired in this bundle, or never set
				k.hold = nil
			}
			out.commits = append(out.commits, cs[i].commits...)
			if w.s.noDrain && len(cs[i].escrows) > 0 {
				w.violation("streamFn sent %d escrow records of key %s without WithEndOfInputDrain", len(cs[i].escrows), key)
				continue
			}
			for _, r := range cs[i].escrows {
				out.escrows = append(out.escrows, keyedRecord{key: key, rec: r})
			}
		}
		w.emit(w.streamOp(), out, wm, "streamFn")
		w.wm.deliver(w.simWorld, records)
		for _, key := range keys {
			w.feedEscrow(key, false)
		}
		w.watermark()
		return
	}
}

// deliver hands records to their keys' owners: the records of one key in
// order, each key in a bundle of its own, or (together) the keys of one
// owner in one bundle; with withTimer, a key's timer fires in its bundle,
// after its records, or before them with timerFirst (Beam does not order a
// bundle's timers and elements).
func (w *streamWorld) deliver(elems []simElem, withTimer, timerFirst, together bool) {
	var keys []string
	byKey := map[string][]simElem{}
	for _, e := range elems {
		if byKey[e.key] == nil {
			keys = append(keys, e.key)
		}
		byKey[e.key] = append(byKey[e.key], e)
		w.delivered[e.name()]++
	}
	var bundles [][]string
	byOwner := map[int]int{} // owner -> its bundle, when together
	for _, key := range keys {
		o := w.keys[key].owner
		if i, ok := byOwner[o]; ok && together {
			bundles[i] = append(bundles[i], key)
			continue
		}
		byOwner[o] = len(bundles)
		bundles = append(bundles, []string{key})
	}
	for _, bk := range bundles {
		fire := make([]bool, len(bk))
		for i, key := range bk {
			k := w.keys[key]
			fire[i] = withTimer && k.timer != nil
			if fire[i] {
				k.timer = nil
			}
		}
		var records []simElem
		for _, key := range bk {
			records = append(records, byKey[key]...)
		}
		w.bundle(bk, records, func(f *streamFn, sts []*memState, tms []*memTimers, cs []*collector) error {
			ctx := context.Background()
			f.StartBundle(ctx, nil, nil, nil)
			for i, key := range bk {
				st, tm, c := sts[i], tms[i], cs[i]
				if fire[i] && timerFirst {
					if err := f.OnTimer(ctx, st, tm, key, beamtimers.Context{Family: f.Commit.Family}, c.emit, c.fail, c.escrow); err != nil {
						return err
					}
				}
				for _, e := range byKey[key] {
					for _, in := range w.inputsOf(e) {
						if err := f.ProcessElement(ctx, e.ts(), st, tm, e.key, w.value(in), c.emit, c.fail, c.escrow); err != nil {
							return err
						}
					}
				}
				if fire[i] && !timerFirst {
					if err := f.OnTimer(ctx, st, tm, key, beamtimers.Context{Family: f.Commit.Family}, c.emit, c.fail, c.escrow); err != nil {
						return err
					}
				}
			}
			return f.FinishBundle(ctx, nil, nil, nil)
		})
	}
}

// fire delivers the key's timer.
func (w *streamWorld) fire(key string) {
	k := w.keys[key]
	k.timer = nil // a fired timer is consumed unless the callback sets it again
	w.bundle([]string{key}, nil, func(f *streamFn, sts []*memState, tms []*memTimers, cs []*collector) error {
		ctx := context.Background()
		f.StartBundle(ctx, nil, nil, nil)
		if err := f.OnTimer(ctx, sts[0], tms[0], key, beamtimers.Context{Family: f.Commit.Family}, cs[0].emit, cs[0].fail, cs[0].escrow); err != nil {
			return err
		}
		return f.FinishBundle(ctx, nil, nil, nil)
	})
}

// waitTask waits for a task of key to finish, moving the simulated clock
// while the guard paces attempts (a task may be one of them).
func (w *streamWorld) waitTask(done <-chan struct{}, key string) {
	limit := time.After(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-limit:
			w.violation("a task of key %s did not finish", key)
			return
		case <-tick.C:
			if w.paced() {
				w.clock.Advance(100 * time.Millisecond)
			}
		}
	}
}

func (w *streamWorld) waitAll() {
	enc := beam.NewElementEncoder(reflect.TypeOf(""))
	for _, wk := range w.workers {
		for _, p := range wk.registry.Pools() {
			for _, k := range w.sortedKeys() {
				kb, _ := wrapped.Encode(enc, k)
				for _, t := range p.ForOwner(string(kb)) { // the pool owner: the key, encoded
					w.waitTask(t.Done(), k)
				}
			}
		}
	}
}

func (w *streamWorld) sortedKeys() []string {
	keys := make([]string, 0, len(w.keys))
	for k := range w.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkBounds: no worker holds more than WithMaxItemsHeld elements with
// places, plus, with WithOrdered, each key's earliest element (one task per
// key without a place, also after failed callbacks: see
// state.Pool.DisplaceUnbuffered).
func (w *streamWorld) checkBounds() {
	for i, wk := range w.workers {
		for _, p := range wk.registry.Pools() {
			limit := w.s.held
			if w.s.ordered {
				limit += len(w.keys)
			}
			if p.Held() > w.s.held || p.Len() > limit {
				w.violation("worker %d holds %d tasks (%d with places); held is %d", i, p.Len(), p.Held(), w.s.held)
			}
		}
	}
}

func (w *streamWorld) apply(a simAction) {
	keys := w.sortedKeys()
	key := keys[a.A%len(keys)]
	switch a.Kind {
	case "deliver":
		end := deliverEnd(a, w.next, len(w.input))
		w.deliver(w.input[w.next:end], a.A%4 == 0, a.B%2 == 0, a.B%3 == 0)
		w.next = end
	case "dup":
		// A second record with the value of an earlier one: another element.
		if i := dupOf(a, w.next); i >= 0 {
			w.dupRecord(w.input[i])
			w.deliver([]simElem{w.input[i]}, false, false, false)
		}
	case "fire":
		if k := w.keys[key]; k.timer != nil {
			if a.B%3 != 0 && k.timer.After(w.clock.Now()) { // on time or late; else early
				w.clock.Advance(k.timer.Sub(w.clock.Now()))
			}
			w.fire(key)
		}
	case "lag":
		// The key's timer comes later than the stale period: its finished
		// results must still be there (nothing sweeps them while there is
		// room), so the key commits without calling again.
		if k := w.keys[key]; k.timer != nil {
			w.waitAll()
			w.clock.Advance(w.base.StaleAfter() + time.Duration(1+a.B%10)*time.Second)
			w.fire(key)
		}
	case "twice":
		w.fire(key) // a spurious or repeated firing
	case "advance":
		w.clock.Advance(time.Duration(a.B) * time.Millisecond)
		if w.s.model.restores && a.A%2 == 0 {
			w.checkpoint()
		}
	case "wait":
		w.waitAll()
		if w.s.model.restores && a.A%2 == 0 {
			w.checkpoint()
		}
	case "restart":
		if w.s.model.restores {
			w.restore(a.B%2 == 0)
			break
		}
		wk := w.workers[a.B%len(w.workers)]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := wk.registry.Reset(ctx); err != nil {
			w.violation("restart: %v", err)
		}
		cancel()
		for i := range wk.fns { // a new process: new instances
			wk.fns[i] = w.newStreamFn(wk)
		}
	case "move":
		if k := w.keys[key]; a.A%3 == 0 && k.timer != nil {
			// A bundle of the key was still running on its old worker
			// when the key moved (a zombie): it runs to its end, and its
			// commit is refused; the key's timer stays set.
			timer := *k.timer
			w.zombie = true
			w.fire(key)
			k.timer = &timer
		}
		w.keys[key].owner = a.B % len(w.workers)
	case "failnext":
		w.failNext = true
	}
	w.closeDue() // Flink closes its bundles by time, whatever else happens
	w.checkBounds()
}

// finish delivers the rest of the input, then fires timers until every key
// is empty, as prism and Dataflow do. On a model whose final watermark
// drops processing-time timers (Flink), that watermark comes after
// s.finalRounds rounds, or once the keys are empty if sooner
// (finalWatermark), with a checkpoint or not after each round.
func (w *streamWorld) finish() {
	w.deliver(w.input[w.next:], false, false, true)
	w.next = len(w.input)
	if w.s.model.dropsLateTimers {
		defer w.finalWatermark()
	}
	for round := 0; round < 200; round++ {
		if w.s.model.dropsLateTimers && round == w.s.finalRounds {
			return
		}
		pending := false
		w.waitAll()
		for _, key := range w.sortedKeys() {
			k := w.keys[key]
			if k.elements() == 0 {
				continue
			}
			pending = true
			if k.timer == nil {
				w.violation("key %s holds %d elements but no timer: they would never commit", key, k.elements())
				return
			}
			if k.timer.After(w.clock.Now()) {
				w.clock.Advance(k.timer.Sub(w.clock.Now()))
			}
			w.fire(key)
		}
		if !pending {
			return
		}
		// A round of the runner takes a while: time passes, so results a
		// moved key left behind on its old worker grow stale and can be
		// evicted for room.
		w.clock.Advance(time.Second)
		w.endCheckpoint()
	}
	w.violation("keys still hold elements after 200 rounds")
}

// drain runs the end-of-input drain (internal/drain) once the input watermark
// has passed the end of time, on every model: escrowFn takes the records
// of each key still in flight (feedEscrow), then, if it holds anything, its
// timer fires in a bundle of its own. A key that holds elements without a
// timer is a violation; on the models whose timers fire until the keys are
// empty, the drain must find nothing to run, or the element would be
// committed twice (check counts every commit). On Flink's model the drain
// bundles run on escrowFn's subtask (emit), with a checkpoint or not after
// each, and the last closes when its output watermark reaches the end of
// time; a job that hung at its end (finalWatermark) never drains.
func (w *streamWorld) drain() {
	if w.s.noDrain || w.flink.hung {
		return
	}
	defer w.finishBundle(w.escrowOp())
	reg := w.workers[0].registry
	for _, key := range w.sortedKeys() {
		w.feedEscrow(key, true)
		e := &w.keys[key].escrow
		if e.st == nil { // no record came
			continue
		}
		b, err := w.escrowInstance().drainPath().Read(e.st)
		if err != nil {
			w.violation("escrowFn state of key %s: %v", key, err)
			return
		}
		set := e.timer != nil
		switch {
		case len(b.Held) > 0 && !set:
			w.violation("the drain holds %d elements of key %s but no timer", len(b.Held), key)
		case len(b.Held) > 0 && !w.s.model.dropsLateTimers:
			w.violation("the drain holds %d elements of key %s on a model whose timers commit every element", len(b.Held), key)
		case len(b.Held) == 0 && set:
			w.violation("the drain holds nothing of key %s but its timer is set", key)
		}
		if !set {
			continue
		}
		w.startBundle(w.escrowOp())
		wm := w.watermark()
		var (
			c  *collector
			st *memState
			tm *memTimers
		)
		for try := 0; ; try++ {
			// The bundle works on a copy of the committed state. One in
			// three fails after its work (as when a later step of its
			// stage fails; at most two in a row): its state, timer and
			// outputs are discarded, and the timer fires again in a bundle
			// on a new instance, which finds the calls the failed one
			// started in the worker's registry.
			c, st, tm = w.collector(), &memState{bags: copyBags(e.st.bags), reversed: e.st.reversed}, &memTimers{}
			f := newEscrowFn(w.instance(reg))
			ctx := context.Background()
			if err := f.StartBundle(ctx, c.emit, c.fail); err != nil {
				w.violation("escrowFn.StartBundle: %v", err)
				return
			}
			// The drained elements wait for places that the stream's
			// stranded results hold until they are evicted as stale, and
			// then for their calls, retries and the guard's pace: all on
			// the simulated clock.
			err = w.whileClockMoves(func() error {
				if err := f.OnTimer(ctx, st, tm, key, beamtimers.Context{Family: f.Drain.Family}, c.emit, c.fail); err != nil {
					return err
				}
				return f.FinishBundle(ctx, c.emit, c.fail)
			})
			if err != nil {
				w.violation("escrowFn's drain of key %s: %v", key, err)
				return
			}
			if try < 2 && w.rng.IntN(3) == 0 {
				w.drainBundlesFailed++
				w.problems = append(w.problems, c.problems...)
				continue
			}
			break
		}
		e.st = st
		e.timer = nil // fired; set again only if the drain set it
		e.setTimer(tm)
		if left, err := w.escrowInstance().drainPath().Read(e.st); err != nil || len(left.Held)+len(left.Early) != 0 {
			w.violation("the drain left the state of key %s holding elements or releases (err %v)", key, err)
		}
		w.drained += len(c.commits)
		w.problems = append(w.problems, c.problems...)
		w.emit(w.escrowOp(), simOutputs{commits: c.commits}, wm, "the drain")
		w.watermark()
		w.endCheckpoint()
	}
}

// whileClockMoves runs fn, which may wait on the simulated clock, moving the
// clock while it runs.
func (w *streamWorld) whileClockMoves(fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	for range 36000 {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Millisecond):
			w.clock.Advance(100 * time.Millisecond)
		}
	}
	return fmt.Errorf("did not return within a simulated hour")
}

func (w *streamWorld) checkState() {
	for key, k := range w.keys {
		if n := len(k.bags[stream.PendingStateID]) + len(k.bags[stream.QueuedStateID]); n != 0 {
			w.violation("key %s: bag state holds %d entries at the end", key, n)
		}
	}
}

// runSchedule runs one schedule and returns its violations.
func runSchedule(t *testing.T, s simSchedule) []string {
	return simulate(t, s).problems
}

// simResult is what one schedule's run found: its violations; how many
// records its runner's final watermark left uncommitted (simModel) and how
// many the end-of-input drain committed; how many outputs and failure
// records were committed behind the downstream watermark (simWatermarks),
// lateAfterInput of them once all input was delivered; and how many
// outputs and records Flink's checkpoints buffered (simFlink).
type simResult struct {
	problems                            []string
	lost, drained, late, lateAfterInput int
	escrowBundlesFailed, restores       int
	drainBundlesFailed, zombies         int
	buffered                            int
}

// simulate runs one schedule.
func simulate(t *testing.T, s simSchedule) simResult {
	simCalls.Lock()
	delete(simCalls.calls, s.seed)
	delete(simCalls.reverts, s.seed)
	simCalls.Unlock()
	if s.batch {
		return simResult{problems: runBundleSchedule(t, s)}
	}
	baseline := runtime.NumGoroutine()
	w := newStreamWorld(t, s)
	for _, a := range s.actions {
		w.apply(a)
	}
	w.finish()
	w.drain()
	w.checkBuffers()
	w.checkState()
	w.check(w.delivered)
	var regs []*state.Registry
	for _, wk := range w.workers {
		regs = append(regs, wk.registry)
	}
	w.release(regs, baseline)
	return simResult{problems: w.problems, lost: w.lost, drained: w.drained, late: w.wm.late, lateAfterInput: w.wm.lateAfterInput, escrowBundlesFailed: w.escrowBundlesFailed, restores: w.restores, drainBundlesFailed: w.drainBundlesFailed, zombies: w.zombies, buffered: w.flink.buffered}
}

// shrink removes actions while the schedule still fails, to report the
// shortest schedule found that reproduces a violation.
func shrink(t *testing.T, s simSchedule) simSchedule {
	for i := len(s.actions) - 1; i >= 0; i-- {
		try := s
		try.actions = append(append([]simAction(nil), s.actions[:i]...), s.actions[i+1:]...)
		if len(runSchedule(t, try)) > 0 {
			s = try
		}
	}
	return s
}

// longTests says whether the long runs are wanted: .ci/run sets
// ASYNCBEAM_LONG_TESTS=1; a plain go test runs them shorter.
func longTests() bool { return os.Getenv("ASYNCBEAM_LONG_TESTS") != "" }

// TestSimulator runs each seeded schedule on each runner model (simModel)
// and prints one line per model. Schedules run with the end-of-input drain
// (WithEndOfInputDrain), so a record missing, or committed behind the
// downstream watermark, on any model is a violation; lost_at_final_watermark
// counts only what schedules without it lose on Flink
// (TestSimulatorEndOfInputDrain), and stays 0 here unless -sim.nodrain runs
// them without it; late_outputs (each a violation) and buffered (what
// Flink's checkpoints buffered, none with the library's options) stay 0.
func TestSimulator(t *testing.T) {
	schedules := *simSchedules
	if schedules == 0 {
		schedules = 100
		if longTests() {
			schedules = 1000
		}
	}
	seeds := make([]uint64, 0, schedules)
	if *simSeed != 0 {
		seeds = append(seeds, *simSeed)
	} else {
		for i := 1; i <= schedules; i++ {
			seeds = append(seeds, uint64(i)*7919)
		}
	}
	replayNoDrain := ""
	if *simNoDrain {
		replayNoDrain = " -sim.nodrain"
	}
	for _, model := range simModels {
		if *simModelName != "" && model.name != *simModelName {
			continue
		}
		violations, lost, late, escrowFailed, restores, drainFailed, zombies, buffered := 0, 0, 0, 0, 0, 0, 0, 0
		for _, seed := range seeds {
			s := newSchedule(seed)
			s.model, s.noDrain = model, *simNoDrain
			res := simulate(t, s)
			problems := res.problems
			lost, late, escrowFailed, restores = lost+res.lost, late+res.late, escrowFailed+res.escrowBundlesFailed, restores+res.restores
			drainFailed, zombies, buffered = drainFailed+res.drainBundlesFailed, zombies+res.zombies, buffered+res.buffered
			if len(problems) == 0 {
				continue
			}
			violations++
			small := shrink(t, s)
			t.Errorf("model %s, seed %d (batch=%v, windows=%s, ordered=%v, %d elements, %d keys, %d workers, parallelism %d, buffer %d, held %d, cache %v, requests %v of %d by key %v): %s\nshortest schedule: %v\nreplay: go test ./transforms/async -run '^TestSimulator$' -args -sim.seed=%d -sim.model=%s%s",
				model.name, seed, s.batch, s.windows, s.ordered, s.elements, s.keys, s.worker, s.parallelism, s.buffer, s.held, s.cache, s.requests, s.batchSize, s.batchesByKey, strings.Join(problems, "; "), small.actions, seed, model.name, replayNoDrain)
			if violations >= 3 {
				break
			}
		}
		fmt.Printf("model=%s schedules=%d violations=%d lost_at_final_watermark=%d late_outputs=%d buffered=%d escrow_bundles_failed=%d drain_bundles_failed=%d restores=%d zombies=%d\n", model.name, len(seeds), violations, lost, late, buffered, escrowFailed, drainFailed, restores, zombies)
	}
}

// TestSimulatorEndOfInputDrain: on the Flink model a stream that ends while
// keys hold elements loses them without the drain (WithEndOfInputDrain),
// since streamFn has no callback once the final watermark is in (simModel)
// and its only timer is one Flink then ignores; with the drain the same
// schedules lose nothing, and the drain commits those records. Elements
// pending at the end are common (calls take time), so the records lost
// without the drain and those drained with it must be some; no schedule
// may break another rule on the way.
func TestSimulatorEndOfInputDrain(t *testing.T) {
	for _, noDrain := range []bool{true, false} {
		lost, drained, schedules, lossy := 0, 0, 0, 0
		for i := 1; i <= 40; i++ {
			s := newSchedule(uint64(i) * 7919)
			if s.batch {
				continue
			}
			s.model, s.finalRounds, s.noDrain = simModels[2], 0, noDrain
			res := simulate(t, s)
			if len(res.problems) > 0 {
				t.Errorf("model flink, noDrain %v, seed %d: %s", noDrain, s.seed, strings.Join(res.problems, "; "))
			}
			schedules++
			if res.lost > 0 {
				lossy++
			}
			lost, drained = lost+res.lost, drained+res.drained
		}
		t.Logf("noDrain %v: %d of %d schedules lost %d records, %d drained", noDrain, lossy, schedules, lost, drained)
		switch {
		case noDrain && lost == 0:
			t.Errorf("without the drain no record was lost at Flink's final watermark over %d schedules; the model no longer ends the stream with work pending: update simModel and this test", schedules)
		case !noDrain && lost > 0:
			t.Errorf("with the drain %d records were lost at Flink's final watermark over %d schedules; want none", lost, schedules)
		case !noDrain && drained == 0:
			t.Errorf("with the drain no record was drained at Flink's final watermark over %d schedules; want some", schedules)
		}
	}
}

// TestSimulatorRegressions replays seeds whose schedules once found faults:
// a key that moved between workers left finished results holding buffer
// places on its old worker for ever, so the key never drained (87109,
// 2431133, 3729849); a key's queued elements were never started because a
// full worker only looked for places held by keys gone elsewhere when a new
// element arrived (8433735). (Their schedules changed with the simulator
// since; they stay as seeds.) With WithOrdered, callbacks that failed
// after committing a key's earliest element left the unbuffered tasks they
// had started for the next ones running, beyond one per key (75531422; it
// shows in about a third of its runs, as goroutines are scheduled). A key
// that came back to a worker after an eviction and then moved away for good
// kept its finished result and a place kept for it there for Gone (ten
// stale periods), and a key waiting on that worker for room got none
// (24414277). Each runs on every runner model: a moved key is what a
// retry on another worker (dataflow) makes most of.
func TestSimulatorRegressions(t *testing.T) {
	for _, seed := range []uint64{87109, 2431133, 3729849, 8433735, 75531422, 24414277} {
		for _, model := range simModels {
			s := newSchedule(seed)
			s.model = model
			if problems := runSchedule(t, s); len(problems) > 0 {
				t.Errorf("model %s, seed %d: %s", model.name, seed, strings.Join(problems, "; "))
			}
		}
	}
}

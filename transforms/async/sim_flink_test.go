package async

// The runner simulator's Flink operators (sim_test.go's simModel says what
// each rule is and where it comes from): the job's options, each subtask's
// open bundle and the output buffer a checkpoint fills, the source's final
// watermark and the end of its task.

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/asyncbeam/asyncbeam/state"
)

// simFlinkOptions are the Flink job options the model reads.
type simFlinkOptions struct {
	// idleShutdown is shutdown_sources_after_idle_ms: the source's task
	// ends that long after it started (ImpulseSourceFunction emits the
	// impulse and the final watermark, then waits), at once with 0.
	idleShutdown time.Duration
	// finishBeforeCheckpoint is finish_bundle_before_checkpointing.
	finishBeforeCheckpoint bool
}

// simFlinkDefaults are the options as the library sends them: a positive
// idle time, here longer than any schedule runs, and
// finish_bundle_before_checkpointing.
var simFlinkDefaults = simFlinkOptions{idleShutdown: time.Hour, finishBeforeCheckpoint: true}

// simMaxBundleTime is max_bundle_time_mills as Flink's streaming mode
// defaults it.
const simMaxBundleTime = time.Second

// simOutputs is what a committed bundle emits: outputs and failure records,
// and records to escrowFn.
type simOutputs struct {
	commits []commitRecord
	escrows []keyedRecord
}

// keyedRecord is a record to escrowFn with its key.
type keyedRecord struct {
	key string
	rec simRecord
}

func (o *simOutputs) add(p simOutputs) {
	o.commits = append(o.commits, p.commits...)
	o.escrows = append(o.escrows, p.escrows...)
}

func (o simOutputs) len() int { return len(o.commits) + len(o.escrows) }

func (o simOutputs) clone() simOutputs {
	return simOutputs{commits: slices.Clone(o.commits), escrows: slices.Clone(o.escrows)}
}

// simOperator is one subtask of a Flink stage: its open bundle and what a
// checkpoint buffered (DoFnOperator.BufferedOutputManager).
type simOperator struct {
	name    string // the fn whose outputs it sends (checkLate)
	open    bool
	started time.Time
	out     simOutputs // the open bundle's
	buffer  simOutputs
}

// simFlink is the Flink model's operators, one subtask of streamFn's stage
// and one of escrowFn's (a key never changes subtask on Flink, whichever
// worker runs it here), when the source's task started, whether the job
// hung at its end, and how many outputs and records checkpoints buffered.
type simFlink struct {
	stream   *simOperator
	escrow   *simOperator
	start    time.Time
	hung     bool
	buffered int
}

func (f *simFlink) operators() []*simOperator {
	if f.stream == nil {
		return nil
	}
	return []*simOperator{f.stream, f.escrow}
}

// startFlink makes the operators on a model with timedBundles.
func (w *streamWorld) startFlink() {
	w.flink.start = w.clock.Now()
	if !w.s.model.timedBundles {
		return
	}
	w.flink.stream = &simOperator{name: "streamFn"}
	w.flink.escrow = &simOperator{name: "the drain"}
}

// streamOp is streamFn's subtask, or nil on a model without timedBundles.
func (w *streamWorld) streamOp() *simOperator { return w.flink.stream }

// escrowOp is escrowFn's subtask, or nil on a model without timedBundles.
func (w *streamWorld) escrowOp() *simOperator { return w.flink.escrow }

// startBundle is a bundle of op starting (DoFnOperator.checkInvokeStartBundle):
// bundles due to close first close; a subtask with none open flushes its
// buffer and opens one, which later bundles of its second join.
func (w *streamWorld) startBundle(op *simOperator) {
	if op == nil {
		return
	}
	w.closeDue()
	if op.open {
		return
	}
	w.flush(op)
	op.open, op.started = true, w.clock.Now()
}

// emit sends on what a committed bundle emitted: at once, checked against
// wm (the downstream watermark before the bundle ran), or on Flink's model
// (op not nil) when op's bundle closes.
func (w *streamWorld) emit(op *simOperator, out simOutputs, wm mtime.Time, fn string) {
	if op == nil {
		w.send(out, wm, fn)
		return
	}
	op.out.add(out)
}

// send commits outputs, checked against wm, and puts escrow records in
// flight to escrowFn.
func (w *streamWorld) send(out simOutputs, wm mtime.Time, fn string) {
	w.commits = append(w.commits, out.commits...)
	w.checkLate(out.commits, wm, fn)
	for _, r := range out.escrows {
		e := &w.keys[r.key].escrow
		e.inflight = append(e.inflight, r.rec)
	}
}

// closeDue closes the bundles open for simMaxBundleTime
// (DoFnOperator.checkInvokeFinishBundleByTime).
func (w *streamWorld) closeDue() {
	for _, op := range w.flink.operators() {
		if op.open && !w.clock.Now().Before(op.started.Add(simMaxBundleTime)) {
			w.finishBundle(op)
		}
	}
}

// finishBundle closes op's open bundle, which sends its outputs on.
func (w *streamWorld) finishBundle(op *simOperator) {
	if op == nil || !op.open {
		return
	}
	out := op.out
	op.open, op.out = false, simOutputs{}
	w.send(out, w.downstream(), op.name)
}

// flush sends on what a checkpoint buffered in op
// (BufferedOutputManager.flushBuffer), checked against the downstream
// watermark as it now is.
func (w *streamWorld) flush(op *simOperator) {
	if op == nil || op.buffer.len() == 0 {
		return
	}
	out := op.buffer
	op.buffer = simOutputs{}
	w.send(out, w.downstream(), op.name)
}

// checkpointBundles finishes the open bundles for a checkpoint: before its
// barrier, sending their outputs, with finish_bundle_before_checkpointing
// (prepareSnapshotPreBarrier); else in snapshotState, into the buffer.
func (w *streamWorld) checkpointBundles() {
	w.closeDue()
	for _, op := range w.flink.operators() {
		switch {
		case !op.open:
		case w.s.flink.finishBeforeCheckpoint:
			w.finishBundle(op)
		default:
			w.flink.buffered += op.out.len()
			op.buffer.add(op.out)
			op.open, op.out = false, simOutputs{}
		}
	}
}

// buffers is a copy of what the operators' buffers hold: operator state,
// which a checkpoint keeps.
func (f *simFlink) buffers() []simOutputs {
	var out []simOutputs
	for _, op := range f.operators() {
		out = append(out, op.buffer.clone())
	}
	return out
}

// restore brings the operators back to a checkpoint's buffers, with no
// bundle open (a failed task's open bundles are gone), and starts the
// source's task again at now.
func (f *simFlink) restore(buffers []simOutputs, now time.Time) {
	for i, op := range f.operators() {
		op.open, op.out, op.buffer = false, simOutputs{}, buffers[i].clone()
	}
	f.start = now
}

// finalWatermark is the source's final watermark on Flink's model: the
// input watermark passes the global window's end, which first flushes what
// a checkpoint buffered in streamFn's stage (processWatermark1). No
// callback of streamFn commits what a key still holds from then on: each
// key's timer fires at its time, in the order they fall due, and is
// ignored, its hold released, and the firing starts a bundle (which
// flushes the subtask's buffer). A timer still set when the source's task
// ends (simFlinkOptions.idleShutdown after it started) holds the watermark
// for ever: the job hangs, a violation, and the drain never runs. Once no
// timer is left the keys' state goes, the stage's open bundles close and
// its output watermark reaches the end of time. A key holding elements
// with no timer set is a violation, as in finish: it would never commit on
// any runner. Without the drain (noDrain) the elements the keys hold are
// lost (lostAtEnd; copies of one element in a bag count once, as the
// transform reads them); with it, drain runs them.
func (w *streamWorld) finalWatermark() {
	w.waitAll()
	w.wm.source = mtime.MaxTimestamp
	w.watermark()
	var timed []string
	for _, key := range w.sortedKeys() {
		k := w.keys[key]
		if k.timer != nil {
			timed = append(timed, key)
		} else if k.elements() > 0 {
			w.violation("key %s holds %d elements but no timer at the final watermark: they would never commit", key, k.elements())
		}
		if !w.s.noDrain {
			continue
		}
		st := &memState{bags: k.bags}
		records := map[state.ElementID]bool{}
		for _, env := range append(st.envelopes(), st.queued()...) {
			if id := env.Element(key).Base(); !records[id] {
				records[id] = true
				v := int(env.EventTimeMs) - 1000 // simElem.ts
				w.lostAtEnd[[2]string{simElem{key, v}.name(), env.Window}]++
			}
		}
	}
	slices.SortStableFunc(timed, func(a, b string) int { return w.keys[a].timer.Compare(*w.keys[b].timer) })
	shutdown := w.flink.start.Add(w.s.flink.idleShutdown)
	for _, key := range timed {
		k := w.keys[key]
		at := *k.timer
		if at.Before(w.clock.Now()) {
			at = w.clock.Now()
		}
		if !at.Before(shutdown) {
			w.violation("hang: key %s's processing-time timer, due at %v, still holds streamFn's output watermark when the source's task ends at %v (shutdown_sources_after_idle_ms %v after its start): flushData loops for ever", key, at, shutdown, w.s.flink.idleShutdown)
			w.flink.hung = true
			return
		}
		w.clock.Advance(at.Sub(w.clock.Now()))
		w.startBundle(w.streamOp())
		k.timer, k.hold = nil, nil
		w.watermark()
		w.endCheckpoint()
	}
	for _, k := range w.keys {
		k.bags = map[string][]any{}
	}
	w.finishBundle(w.streamOp())
	w.watermark()
}

// endCheckpoint takes a checkpoint or not, as the schedule's generator
// draws, on a model with checkpoints: Flink keeps taking them once the
// input has ended.
func (w *streamWorld) endCheckpoint() {
	if w.s.model.restores && w.rng.IntN(2) == 0 {
		w.checkpoint()
	}
}

// checkBuffers: at the end, after every stage's final watermark, no
// subtask keeps outputs a checkpoint buffered; no element or timer comes
// to flush them.
func (w *streamWorld) checkBuffers() {
	for _, op := range w.flink.operators() {
		if n := op.buffer.len(); n > 0 {
			w.violation("stalled: the stage of %s keeps %d outputs and escrow records that a checkpoint buffered while its bundle was open (finish_bundle_before_checkpointing off), after its final watermark; no element or timer comes to flush them, and flushData sends them behind the final watermark, if the source's task ends", op.name, n)
		}
	}
}

// TestSimulatorFlinkShutdown: on Flink's model a job whose source's task
// ends while a processing-time timer still holds streamFn's watermark
// hangs, and the simulator reports it: with shutdown_sources_after_idle_ms
// at 0, and at 1 ms, less than the stream runs (the idle time counts from
// the task's start). With the library's value (simFlinkDefaults) the
// timers fall due before the task ends and no schedule hangs. A schedule
// that does not hang breaks no rule.
func TestSimulatorFlinkShutdown(t *testing.T) {
	for _, tc := range []struct {
		idle      time.Duration
		wantHangs bool
	}{
		{0, true},
		{time.Millisecond, true},
		{simFlinkDefaults.idleShutdown, false},
	} {
		hangs, schedules := 0, 0
		for i := 1; i <= 30; i++ {
			s := newSchedule(uint64(i) * 7919)
			if s.batch {
				continue
			}
			s.model, s.flink.idleShutdown = simModels[2], tc.idle
			res := simulate(t, s)
			schedules++
			if slices.ContainsFunc(res.problems, func(p string) bool { return strings.HasPrefix(p, "hang:") }) {
				hangs++
				continue
			}
			if len(res.problems) > 0 {
				t.Errorf("idle %v, seed %d: %s", tc.idle, s.seed, strings.Join(res.problems, "; "))
			}
		}
		t.Logf("shutdown_sources_after_idle_ms %v: %d of %d schedules hang", tc.idle, hangs, schedules)
		switch {
		case tc.wantHangs && hangs == 0:
			t.Errorf("idle %v: no schedule hung over %d; want some (a timer is left at the final watermark)", tc.idle, schedules)
		case !tc.wantHangs && hangs > 0:
			t.Errorf("idle %v: %d of %d schedules hung; want none", tc.idle, hangs, schedules)
		}
	}
}

// TestSimulatorFlinkCheckpointBuffer: without
// finish_bundle_before_checkpointing, Flink's checkpoints buffer the
// outputs of the bundles still open, and a stage whose last bundle a
// checkpoint buffered after its final watermark keeps them: the simulator
// finds such schedules (stalled). With it (the library's default) nothing
// is buffered, and no schedule breaks a rule.
func TestSimulatorFlinkCheckpointBuffer(t *testing.T) {
	for _, finish := range []bool{false, true} {
		buffered, stalled, late, schedules := 0, 0, 0, 0
		for i := 1; i <= 40; i++ {
			s := newSchedule(uint64(i) * 7919)
			if s.batch {
				continue
			}
			s.model, s.flink.finishBeforeCheckpoint = simModels[2], finish
			res := simulate(t, s)
			schedules++
			buffered, late = buffered+res.buffered, late+res.late
			if slices.ContainsFunc(res.problems, func(p string) bool { return strings.HasPrefix(p, "stalled:") }) {
				stalled++
			}
			if finish && len(res.problems) > 0 {
				t.Errorf("finish_bundle_before_checkpointing, seed %d: %s", s.seed, strings.Join(res.problems, "; "))
			}
		}
		t.Logf("finish_bundle_before_checkpointing %v: %d schedules, %d outputs and records buffered, %d schedules stalled, %d outputs late", finish, schedules, buffered, stalled, late)
		switch {
		case !finish && (buffered == 0 || stalled == 0):
			t.Errorf("without finish_bundle_before_checkpointing: %d buffered, %d of %d schedules stalled; want some of each", buffered, stalled, schedules)
		case finish && buffered > 0:
			t.Errorf("with finish_bundle_before_checkpointing: %d outputs and records buffered; want none", buffered)
		}
	}
}

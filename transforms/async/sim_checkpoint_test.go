package async

// The runner simulator's checkpoints (Flink's model; sim_test.go's file
// comment says where each rule comes from): a task failure restores every
// key's state, the records in flight and the source's position to the last
// completed checkpoint, and the source replays from there, while what the
// job did outside its state stays done: calls, results in a worker's
// registry when its process survives, and Revert. And the revert step,
// which runs on the failure records, as every model runs it.

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// simCheckpoint is what a completed checkpoint holds: every key's state,
// timers and records in flight to escrowFn, the source's position and the
// records it delivered, the committed outputs (those of the sink's
// transaction at the checkpoint), the watermarks, and what the operators'
// buffers hold (sim_flink_test.go).
type simCheckpoint struct {
	keys      map[string]simKey
	next      int
	delivered map[string]int
	commits   int
	wm        simWatermarks
	buffers   []simOutputs
}

// copyKey is a deep copy of a key's committed state.
func copyKey(k *simKey) simKey {
	c := *k
	c.bags = copyBags(k.bags)
	if k.timer != nil {
		t := *k.timer
		c.timer = &t
	}
	if k.hold != nil {
		h := *k.hold
		c.hold = &h
	}
	if k.escrow.st != nil {
		c.escrow.st = &memState{bags: copyBags(k.escrow.st.bags), reversed: k.escrow.st.reversed}
	}
	if k.escrow.timer != nil {
		t := *k.escrow.timer
		c.escrow.timer = &t
	}
	c.escrow.inflight = append([]simRecord(nil), k.escrow.inflight...)
	return c
}

func copyBags(bags map[string][]any) map[string][]any {
	out := make(map[string][]any, len(bags))
	for name, entries := range bags {
		out[name] = append([]any(nil), entries...)
	}
	return out
}

func copyWatermarks(m simWatermarks) simWatermarks {
	c := m
	c.undelivered = maps.Clone(m.undelivered)
	c.lateInput = maps.Clone(m.lateInput)
	return c
}

// checkpoint completes a checkpoint of the Flink model (simModel.restores),
// between the simulator's bundles. It finishes the operators' open bundles
// (checkpointBundles): with finish_bundle_before_checkpointing before its
// barrier, their outputs sent on and the watermarks moved first
// (prepareSnapshotPreBarrier calls updateOutputWatermark); without, into
// their buffers, which the checkpoint keeps, and the watermarks move after
// (the finished bundle lets the stage's watermark through). With stable
// input (Revert's step marked @RequiresStableInput: RequireStableInput),
// Flink hands the revert step its input only once the checkpoint that
// holds it completes (runners/flink's BufferingDoFnRunner), so Revert runs
// here.
func (w *streamWorld) checkpoint() {
	w.checkpointBundles()
	if w.s.flink.finishBeforeCheckpoint {
		w.watermark()
	}
	cp := &simCheckpoint{keys: make(map[string]simKey, len(w.keys)), next: w.next,
		delivered: maps.Clone(w.delivered), commits: len(w.commits), wm: copyWatermarks(w.wm), buffers: w.flink.buffers()}
	for name, k := range w.keys {
		cp.keys[name] = copyKey(k)
	}
	w.lastCheckpoint = cp
	if !w.s.unstableRevert {
		w.revertUpTo(len(w.commits))
	}
	if !w.s.flink.finishBeforeCheckpoint {
		w.watermark()
	}
}

// restore is a task failure on the Flink model: the job restarts from the
// last completed checkpoint (the start, before the first), new DoFn
// instances everywhere, the operators' buffers as the checkpoint kept them
// and no bundle open (the outputs of those open at the failure never left),
// the source's task started anew, and each worker's registry either survives
// (an SDK harness that outlives the task) or, with harness, restarts empty.
// The source replays its records from the checkpoint's position; duplicate
// records delivered since are not replayed (the model's duplicates are
// actions of the schedule, not records of the source). Without stable input
// the revert step has already seen the failure records committed since that
// checkpoint (a Reshuffle is a pipelined rebalance on Flink, no checkpoint),
// and their elements are now replayed.
func (w *streamWorld) restore(harness bool) {
	w.closeDue() // the bundles that closed by time before the task failed
	cp := w.lastCheckpoint
	if w.s.unstableRevert {
		w.revertUpTo(len(w.commits))
	}
	w.commits = w.commits[:cp.commits]
	w.reverted = min(w.reverted, cp.commits)
	// The late counts are the run's findings, not the job's state.
	late, lateAfterInput := w.wm.late, w.wm.lateAfterInput
	w.next, w.delivered, w.wm = cp.next, maps.Clone(cp.delivered), copyWatermarks(cp.wm)
	w.wm.late, w.wm.lateAfterInput = late, lateAfterInput
	for name, k := range cp.keys {
		c := copyKey(&k)
		w.keys[name] = &c
	}
	w.escrowFn = nil
	w.flink.restore(cp.buffers, w.clock.Now())
	for _, wk := range w.workers {
		if harness {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := wk.registry.Reset(ctx); err != nil {
				w.violation("restore: %v", err)
			}
			cancel()
		}
		for i := range wk.fns {
			wk.fns[i] = w.newStreamFn(wk)
		}
	}
	w.restores++
}

// startCheckpoints takes the checkpoint a restore before the first goes
// back to: the job's start.
func (w *streamWorld) startCheckpoints() {
	if w.s.model.restores {
		w.checkpoint()
	}
}

// revertUpTo runs the revert step (revertFn, as the transform builds it)
// over the failure records committed from w.reverted up to n, counting its
// reverts by element in w.stepReverts.
func (w *simWorld) revertUpTo(n int) {
	if w.rf == nil {
		w.rf = &revertFn{User: w.base.User, KeyType: w.base.KeyType, ValueType: w.base.ValueType}
		if err := w.rf.Setup(context.Background()); err != nil {
			w.violation("revertFn.Setup: %v", err)
			return
		}
	}
	for _, c := range w.commits[w.reverted:n] {
		if c.failure == nil {
			continue
		}
		if err := w.rf.ProcessElement(context.Background(), *c.failure, func(Failure) {}); err != nil {
			w.violation("revertFn of %s: %v", c.name, err)
		}
		w.stepReverts[c.name]++
	}
	w.reverted = max(w.reverted, n)
}

// TestSimulatorRevertOnFlink: Flink restores a failed job from its last
// checkpoint, and its Reshuffle is no checkpoint. Each schedule commits
// failure records (every attempt fails; two seconds without a checkpoint
// let their bundles close and send them on), then a task fails and the job
// restores: to its start, or to a checkpoint taken after the first
// elements' failures were committed. The elements after the checkpoint
// are replayed and fail again. If the revert step ran on failure records
// as they came (unstableRevert), it has reverted those elements once
// before the restore and once after, for one committed record each. With
// the step on stable input (RequireStableInput), Revert sees only the
// failure records of a completed checkpoint, which no restore undoes: each
// element once, those before the checkpoint at it.
func TestSimulatorRevertOnFlink(t *testing.T) {
	// rounds lets the calls of the elements delivered so far fail for
	// good (attempts and backoffs) and their failure records commit; an
	// odd A: its waits and advances take no checkpoint.
	rounds := func() []simAction {
		var out []simAction
		for range 6 {
			out = append(out, simAction{"advance", 1, 50}, simAction{"wait", 1, 0}, simAction{"fire", 0, 1}, simAction{"fire", 1, 1})
		}
		return out
	}
	closed := []simAction{{"advance", 1, 999}, {"advance", 1, 999}}
	schedules := []struct {
		name    string
		actions []simAction
	}{
		{"restored to the start", slices.Concat([]simAction{{"deliver", 1, 2}, {"deliver", 1, 2}}, rounds(), closed, []simAction{{"restart", 0, 1}})},
		{"restored to a checkpoint between failures", slices.Concat([]simAction{{"deliver", 1, 2}}, rounds(),
			[]simAction{{"wait", 0, 0}, {"deliver", 1, 2}}, rounds(), closed, []simAction{{"restart", 0, 1}})},
	}
	for _, sc := range schedules {
		for _, unstable := range []bool{true, false} {
			s := newSchedule(7919)
			s.model, s.unstableRevert = simModels[2], unstable
			s.batch, s.windows, s.elements, s.keys, s.worker = false, "global", 6, 2, 1
			s.failPct, s.slowPct, s.overload, s.adaptive, s.cache, s.requests = 100, 0, false, false, false, false
			s.actions = sc.actions
			res := simulate(t, s)
			if res.restores != 1 {
				t.Fatalf("%s, unstable %v: %d restores; want 1", sc.name, unstable, res.restores)
			}
			reverted := false
			for _, p := range res.problems {
				reverted = reverted || strings.Contains(p, "reverted 2 times")
			}
			switch {
			case unstable && !reverted:
				t.Errorf("%s, Revert on unstable input: violations %q; want an element reverted twice for one failure record", sc.name, res.problems)
			case !unstable && len(res.problems) > 0:
				t.Errorf("%s, Revert on stable input: %v", sc.name, res.problems)
			}
		}
	}
}

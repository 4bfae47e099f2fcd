package async

// The runner simulator's watermark model (sim_test.go's file comment says
// what it is and where each model's rule comes from): the input watermark,
// the output watermarks of streamFn and escrowFn, the records in flight to
// escrowFn, and the check that no output is committed behind the watermark
// of what follows the transform.

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
)

// simWatermarks is the watermark state of a stream schedule.
type simWatermarks struct {
	// undelivered counts, by event time, the input records that no bundle
	// of streamFn has committed: the input not yet delivered, and the
	// records of a bundle in progress or retried.
	undelivered map[mtime.Time]int
	// lateInput counts, by element name, the outputs that duplicate
	// records delivered behind the input watermark may commit late: late
	// data is as late after the transform as after a ParDo. Each late
	// output of the name uses one up, so a late output beyond them (the
	// original record's, say) is still a violation.
	lateInput map[string]int
	// source is the source's own watermark once it has emitted every
	// record: the end of time, except on Flink's model, where it stays at
	// the last record's event time until the final watermark
	// (finalWatermark).
	source mtime.Time
	// seen is the input watermark streamFn's stage last saw: a higher one
	// flushes what Flink's checkpoints buffered there (sim_flink_test.go).
	seen mtime.Time
	// stream and escrow are the output watermarks of streamFn and escrowFn.
	// Neither goes back: a hold set behind one holds nothing.
	stream, escrow mtime.Time
	// late counts the outputs and failure records committed behind the
	// downstream watermark; lateAfterInput those of them whose bundle began
	// once all input was delivered.
	late, lateAfterInput int
}

// deliverEnd is where a deliver action that starts at next ends (apply).
func deliverEnd(a simAction, next, n int) int { return min(next+1+a.B%5, n) }

// dupOf is the input record a dup action delivers again once next records
// were delivered (apply), or -1 for none.
func dupOf(a simAction, next int) int {
	if next == 0 {
		return -1
	}
	return a.B % next
}

// startWatermarks counts the input records the schedule will deliver (a
// source holds its watermark at a record it has yet to emit).
func (w *streamWorld) startWatermarks() {
	w.wm = simWatermarks{undelivered: map[mtime.Time]int{}, lateInput: map[string]int{}, source: mtime.MaxTimestamp,
		seen: mtime.MinTimestamp, stream: mtime.MinTimestamp, escrow: mtime.MinTimestamp}
	for _, e := range w.input {
		w.wm.undelivered[e.ts()]++
	}
	if w.s.model.dropsLateTimers {
		w.wm.source = w.input[len(w.input)-1].ts()
	}
}

// dupRecord notes a duplicate record about to be delivered, which its
// bundle takes off the undelivered records like any other: on time if the
// input watermark has not passed it (it then holds the watermark like any
// record), else late data, whose outputs, one per window, may be late.
func (w *streamWorld) dupRecord(e simElem) {
	if e.ts() < w.wm.input() {
		w.wm.lateInput[e.name()] += len(e.windows(w.s.windows))
	}
	w.wm.undelivered[e.ts()]++
}

// input is the input watermark: the earliest event time of the records no
// bundle has committed, or the source's own watermark once there are none.
func (m *simWatermarks) input() mtime.Time {
	wm := m.source
	for ts, n := range m.undelivered {
		if n > 0 && ts < wm {
			wm = ts
		}
	}
	return wm
}

// allDelivered says whether bundles have committed every input record.
func (m *simWatermarks) allDelivered() bool {
	for _, n := range m.undelivered {
		if n > 0 {
			return false
		}
	}
	return true
}

// deliver takes the records a bundle committed off the undelivered ones.
func (m *simWatermarks) deliver(w *simWorld, records []simElem) {
	for _, e := range records {
		if m.undelivered[e.ts()] == 0 {
			w.violation("simulator: record %s was delivered but not counted as input (startWatermarks and apply disagree)", e.name())
			continue
		}
		m.undelivered[e.ts()]--
	}
}

// watermark brings the output watermarks of streamFn and escrowFn to the
// state the runner is in, and returns the downstream one: the lesser of the
// two, or streamFn's without the drain. A key's commit timer holds
// streamFn's, on every model (simModel). On Flink's model a stage's
// watermark does not move while a bundle of it is open, and a higher input
// watermark first flushes what a checkpoint buffered in the stage
// (sim_flink_test.go).
func (w *streamWorld) watermark() mtime.Time {
	w.closeDue()
	input := w.wm.input()
	if input > w.wm.seen {
		w.wm.seen = input
		w.flush(w.streamOp())
	}
	if op := w.streamOp(); op == nil || !op.open {
		stream := input
		for _, k := range w.keys {
			if k.hold != nil {
				stream = min(stream, *k.hold)
			}
		}
		if stream > w.wm.stream {
			w.wm.stream = stream
			w.flush(w.escrowOp()) // escrowFn's input watermark
		}
	}
	if w.s.noDrain {
		return w.wm.stream
	}
	if op := w.escrowOp(); op == nil || !op.open {
		escrow := w.wm.stream
		for _, k := range w.keys {
			for _, r := range k.escrow.inflight {
				escrow = min(escrow, r.ts)
			}
			// An event-time timer holds on every model.
			if t := k.escrow.timer; t != nil && !w.s.ignoreEscrowHold {
				escrow = min(escrow, t.HoldTimestamp)
			}
		}
		w.wm.escrow = max(w.wm.escrow, escrow)
	}
	return w.downstream()
}

// downstream is the watermark after the transform as it stands: the lesser
// of streamFn's and escrowFn's, or streamFn's without the drain.
func (w *streamWorld) downstream() mtime.Time {
	if w.s.noDrain {
		return w.wm.stream
	}
	return min(w.wm.stream, w.wm.escrow)
}

// checkLate counts the records a bundle of fn committed behind wm, the
// downstream watermark before they reached it: a GroupByKey after the
// transform would drop them as late. Each is a violation.
func (w *streamWorld) checkLate(commits []commitRecord, wm mtime.Time, fn string) {
	for _, c := range commits {
		if c.ts >= wm {
			continue
		}
		if w.wm.lateInput[c.name] > 0 {
			w.wm.lateInput[c.name]--
			continue
		}
		w.wm.late++
		if w.wm.allDelivered() {
			w.wm.lateAfterInput++
		}
		kind := "output"
		if c.failure != nil {
			kind = "failure record"
		}
		w.violation("%s committed %s %s (window %q) at %v, behind the downstream watermark %v: late for a GroupByKey that follows", fn, kind, c.name, c.win, c.ts, wm)
	}
}

// simRecord is a record of streamFn to escrowFn, with its timestamp.
type simRecord struct {
	ts  mtime.Time
	rec []byte
}

// simEscrow is escrowFn's committed state of one key, and the records in
// flight to it.
type simEscrow struct {
	st       *memState
	timer    *beamtimers.TimerMap // the set drain timer; nil: none
	inflight []simRecord
}

// setTimer applies what a committed bundle did to the key's drain timer.
func (e *simEscrow) setTimer(tm *memTimers) {
	switch t, ok := tm.lastSet(); {
	case !ok:
	case t.Clear:
		e.timer = nil
	default:
		e.timer = &t
	}
}

// escrowInstance is the escrowFn instance that takes the records.
func (w *streamWorld) escrowInstance() *escrowFn {
	if w.escrowFn == nil {
		w.escrowFn = newEscrowFn(w.instance(w.workers[0].registry))
	}
	return w.escrowFn
}

// feedEscrow delivers records in flight to the key's escrowFn in a bundle:
// all, in the order they were sent (prism); the first of them, a random
// number, in that order (Flink: simModel.escrowInParts); or a random number
// in a random order (Dataflow: shuffledEscrow too), so that releases come
// before their escrows. With all set (the end of input) every record comes.
// Records left stay in flight across later bundles of the stream.
// escrowFn's ProcessElement emits nothing (only its drain timer does: see
// drain), so these bundles have no outputs to check.
func (w *streamWorld) feedEscrow(key string, all bool) {
	e := &w.keys[key].escrow
	n := len(e.inflight)
	if w.s.model.shuffledEscrow {
		w.rng.Shuffle(n, func(i, j int) { e.inflight[i], e.inflight[j] = e.inflight[j], e.inflight[i] })
	}
	if w.s.model.escrowInParts && !all {
		n = w.rng.IntN(n + 1)
	}
	if n == 0 {
		return
	}
	w.startBundle(w.escrowOp())
	var (
		st *memState
		tm *memTimers
		c  *collector
	)
	for try := 0; ; try++ {
		// The bundle works on a copy of the committed state, which it
		// replaces only if it commits: a failed bundle (one in four,
		// after a random number of its records, and at most three in a
		// row) leaves state and timer as they were and its records in
		// flight, and the runner retries them on a new instance.
		st = &memState{bags: map[string][]any{}, reversed: w.s.model.shuffledBags}
		if e.st != nil {
			st.bags = copyBags(e.st.bags)
		}
		failAt := -1
		if try < 3 && w.rng.IntN(4) == 0 {
			failAt = w.rng.IntN(n + 1)
		}
		f, ctx := w.escrowInstance(), context.Background()
		c, tm = w.collector(), &memTimers{}
		err := f.StartBundle(ctx, c.emit, c.fail)
		for i, r := range e.inflight[:n] {
			if err != nil || i == failAt {
				break
			}
			err = f.ProcessElement(ctx, st, tm, key, r.rec, c.emit, c.fail)
		}
		if err == nil && failAt < 0 {
			err = f.FinishBundle(ctx, c.emit, c.fail)
		}
		if err != nil || failAt >= 0 {
			w.escrowFn = nil // the runner drops a failed bundle's instance
		}
		if err != nil {
			w.violation("escrowFn's bundle of %d records of key %s: %v", n, key, err)
			return
		}
		if failAt < 0 {
			break
		}
		w.escrowBundlesFailed++
	}
	e.st = st
	e.inflight = append([]simRecord(nil), e.inflight[n:]...)
	e.setTimer(tm)
	w.commits = append(w.commits, c.commits...)
	w.problems = append(w.problems, c.problems...)
	w.watermark()
}

// TestSimulatorLateOutputs: every model holds streamFn's output watermark
// at its commit timers, processing-time timers (simModel), so no output is
// late, with the drain or without. And the check can fail: with escrowFn's
// hold left out of the model (ignoreEscrowHold) the drain's outputs, after
// the input ended, come behind the downstream watermark, each a violation.
func TestSimulatorLateOutputs(t *testing.T) {
	cases := []struct {
		model           simModel
		noDrain, noHold bool
		// wantLate: some outputs late, each a violation.
		wantLate bool
	}{
		{model: simModels[2], noDrain: true},
		{model: simModels[2]},
		{model: simModels[0], noDrain: true},
		{model: simModels[1], noDrain: true},
		{model: simModels[2], noHold: true, wantLate: true},
	}
	for _, tc := range cases {
		late, afterInput, schedules, lateViolations := 0, 0, 0, 0
		for i := 1; i <= 40; i++ {
			s := newSchedule(uint64(i) * 7919)
			if s.batch {
				continue
			}
			s.model, s.noDrain, s.ignoreEscrowHold = tc.model, tc.noDrain, tc.noHold
			res := simulate(t, s)
			schedules++
			late, afterInput = late+res.late, afterInput+res.lateAfterInput
			for _, p := range res.problems {
				if tc.wantLate && strings.Contains(p, "behind the downstream watermark") {
					lateViolations++
					continue
				}
				t.Errorf("model %s, noDrain %v, ignoreEscrowHold %v, seed %d: %s", tc.model.name, tc.noDrain, tc.noHold, s.seed, p)
			}
		}
		t.Logf("model %s, noDrain %v, ignoreEscrowHold %v: %d schedules, %d late outputs (%d after the input ended)", tc.model.name, tc.noDrain, tc.noHold, schedules, late, afterInput)
		switch {
		case tc.wantLate && (late == 0 || lateViolations != late):
			t.Errorf("model %s, ignoreEscrowHold %v: %d late outputs over %d schedules, %d of them violations; want some, each a violation", tc.model.name, tc.noHold, late, schedules, lateViolations)
		case !tc.wantLate && late > 0:
			t.Errorf("model %s, noDrain %v: %d outputs were late over %d schedules; want none", tc.model.name, tc.noDrain, late, schedules)
		}
	}
}

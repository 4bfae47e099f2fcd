package integration

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/asyncbeam/asyncbeam/runner/nosplit"
)

// TestEarlyEventTimeTimersOnPythonJobService shows, with plain Beam Go
// DoFns (testdata/watermarkjob), why async.WithEndOfInputDrain() cannot run
// on Beam Python's portable job service (apache-beam 2.77.0): there an
// event-time timer fires while elements that the Beam model makes it wait
// for are still to come. The model: an event-time timer fires once the
// input watermark has passed it, and a pending timer holds its stage's
// output watermark at the timer's output timestamp, so a timer downstream
// waits for what the pending timer will emit.
//
// The job: a periodic.Impulse of 15 elements under one key into holdFirst,
// which holds the first element behind a processing-time timer 0.5 s ahead
// and passes the others straight through (setting no timer), into
// countLate, whose event-time timer an hour before the end of the global
// window must fire after every element; it counts the elements that arrive
// after it fired (late). On embedded prism none does. On the Python job
// service (apache_beam/runners/portability/fn_api_runner/fn_runner.py and
// watermark_manager.py):
//
//   - Fused: FnApiRunner.create_stages does not make stateful DoFns roots,
//     so both run in the stage of periodic.Impulse's splittable DoFn, and
//     that stage's input watermark (WatermarkManager.StageNode.input_watermark,
//     the _produced_watermark of its input) is MAX_TIMESTAMP from its first
//     bundle: the stage that made the source's restriction has ended, and
//     the source's residuals hold only that PCollection's own watermark
//     (_build_watermark_updates), which input_watermark does not read.
//     _enqueue_set_timers releases an event-time timer once that watermark
//     reaches it, so countLate's fires in the next bundle and every later
//     element is late. The transform's drain fires early this way: its
//     escrowFn and streamFn share the source's stage too.
//   - Behind a Reshuffle: countLate's stage waits for holdFirst's output,
//     which _execute_bundle marks complete (set_produced_watermark) after
//     the first bundle that leaves no residual and sets no timer, the
//     source's last; _build_watermark_updates holds holdFirst's timer
//     family only at the timers that bundle set (none). The timer set by an
//     earlier bundle, still pending, holds nothing: countLate's timer fires
//     before the held element reaches it (late=1).
//
// holdFirst's timer has its output timestamp at its firing time, not at the
// element's: _collect_written_timers keys a bundle's timers by their
// earliest output timestamp and _enqueue_set_timers releases them when the
// clock (processing time) or input watermark (event time) reaches it,
// without reading the firing time, so a timer whose output timestamp has
// passed fires at once. Waiting work is looked at only when no bundle is
// ready (_schedule_ready_bundles), and work not yet due then ends the job
// ("A total of N time-pending bundles did not execute"): holdFirst's timer
// is due well before the source ends.
//
// The test asserts that rule on the Python job service: if that half fails,
// a newer apache-beam honours the model, and the README's Runners row for
// this runner (and the transform's refusal, drain.ErrDrainedTwice in
// transforms/async/internal/drain) must change.
func TestEarlyEventTimeTimersOnPythonJobService(t *testing.T) {
	const elements = 15 // the job's default --ticks
	job := build(t, "./integration/testdata/watermarkjob")
	for _, shape := range []struct {
		name string
		args []string
	}{
		{"fused", nil},
		{"behind a Reshuffle", []string{"--shuffle"}},
	} {
		for _, python := range []bool{false, true} {
			name := shape.name + ", embedded prism"
			if python {
				name = shape.name + ", Python job service"
			}
			t.Run(name, func(t *testing.T) {
				// The job has stateful DoFns and launches with beamx.Run:
				// prism's splits off, as runner.Run would have them.
				args := append([]string{"--runner=prism", "--experiments=" + nosplit.Experiment}, shape.args...)
				if python {
					args = append([]string{"--runner=universal", "--endpoint=" + pythonJobService(t), "--environment_type=LOOPBACK"}, shape.args...)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				out, err := exec.CommandContext(ctx, job, args...).CombinedOutput()
				if err != nil {
					t.Fatalf("watermarkjob %v: %v\n%s", args, err, tail(out, 4000))
				}
				m := regexp.MustCompile(`stage2: elements=(\d+) late=(\d+) fired=(\d+)`).FindSubmatch(out)
				if m == nil {
					t.Fatalf("no stage2 line in:\n%s", tail(out, 4000))
				}
				seen, _ := strconv.Atoi(string(m[1]))
				late, _ := strconv.Atoi(string(m[2]))
				fired, _ := strconv.Atoi(string(m[3]))
				t.Logf("countLate saw %d elements, %d of them after its event-time timer fired (fired %d times)", seen, late, fired)
				if seen != elements || fired != 1 {
					t.Fatalf("countLate saw %d elements and its timer fired %d times; want each of %d elements once and one firing", seen, fired, elements)
				}
				switch {
				case !python && late != 0:
					t.Errorf("on embedded prism %d elements arrived after countLate's event-time timer fired; want none (the Beam model)", late)
				case python && late == 0:
					t.Errorf("on the Python job service no element arrived after countLate's event-time timer fired: this apache-beam " +
						"holds the watermark as the Beam model says, so the README's Runners row for this runner, which says it does not " +
						"(and why async.WithEndOfInputDrain() is refused there, drain.ErrDrainedTwice), must change, and this test with it")
				}
			})
		}
	}
}

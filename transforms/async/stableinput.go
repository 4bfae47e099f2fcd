package async

// Stable input for the revert step: what makes Revert run only for failures
// no replay can undo on Flink, where a Reshuffle is no checkpoint.

import (
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	v1pb "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"google.golang.org/protobuf/proto"
)

// StableInputRequirement is the pipeline requirement that a ParDo marked
// with requires_stable_input declares (Beam's @RequiresStableInput).
const StableInputRequirement = "beam:requirement:pardo:stable_input:v1"

// RequireStableInput marks the revert steps of the async transforms in a
// pipeline's model (the step that calls the wrapped DoFn's Revert method)
// as requiring stable input, and declares StableInputRequirement; it
// returns how many steps it marked. Call it between graphx.Marshal and the
// job's submission; runner.Run does so on Flink (--runner=flink).
//
// Why: Revert must see only failures that no replay can undo. The revert
// step runs behind a Reshuffle, which prism and Dataflow commit before the
// step reads it. Flink's Reshuffle is a rebalance with no checkpoint: a
// task failure restores the job from its last checkpoint and replays
// elements whose failure records Revert may already have seen, and the
// replay may succeed. With stable input Flink's streaming mode holds the
// input of the step's stage until the checkpoint that holds it completes
// (its BufferingDoFnRunner; so what follows Revert gets the failure records
// a checkpoint later), and fails a job that marks it without exactly-once
// checkpointing (its pipeline options checkpointing_interval and
// checkpointing_mode, EXACTLY_ONCE by default; Beam Go cannot pass them,
// runner.RunStableRevert can). Flink's batch mode (only bounded input)
// ignores the mark, as its batch translator reads: there a restart can
// still replay a reverted element (runner.RunStableRevert refuses such a
// job unless told otherwise). Beam Go v2.77.0 has no way to declare stable
// input on a DoFn, hence this function. prism and Beam Python's job service
// refuse the requirement.
func RequireStableInput(p *pipepb.Pipeline) (int, error) {
	marked := 0
	for id, t := range p.GetComponents().GetTransforms() {
		if t.GetSpec().GetUrn() != graphx.URNParDo {
			continue
		}
		var pardo pipepb.ParDoPayload
		if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pardo); err != nil {
			return 0, fmt.Errorf("async: reading the ParDo payload of transform %s (%s): %w", id, t.GetUniqueName(), err)
		}
		revert, err := runsRevert(pardo.GetDoFn())
		if err != nil {
			return 0, fmt.Errorf("async: reading the DoFn of transform %s (%s), to tell whether it is a revert step: %w", id, t.GetUniqueName(), err)
		}
		if !revert {
			continue
		}
		marked++
		if pardo.GetRequiresStableInput() {
			continue
		}
		pardo.RequiresStableInput = true
		payload, err := proto.Marshal(&pardo)
		if err != nil {
			return 0, fmt.Errorf("async: writing the ParDo payload of transform %s (%s): %w", id, t.GetUniqueName(), err)
		}
		t.Spec.Payload = payload
	}
	if marked > 0 && !slices.Contains(p.GetRequirements(), StableInputRequirement) {
		p.Requirements = append(p.Requirements, StableInputRequirement)
	}
	return marked, nil
}

// runsRevert reports whether a Go DoFn's spec is the revert step's, by the
// registered type of its receiver (decoding the whole DoFn would need every
// function of the pipeline registered, which closures are not). A Go DoFn
// whose payload does not decode is an error, not a step to pass over: it
// could be a revert step that would then run unmarked.
func runsRevert(spec *pipepb.FunctionSpec) (bool, error) {
	if spec.GetUrn() != graphx.URNDoFn {
		return false, nil
	}
	var tp v1pb.TransformPayload
	if err := protox.DecodeBase64(string(spec.GetPayload()), &tp); err != nil {
		return false, err
	}
	t := tp.GetEdge().GetFn().GetType()
	for t.GetKind() == v1pb.Type_PTR {
		t = t.GetElement()
	}
	key, _ := runtime.TypeKey(reflect.TypeOf(revertFn{}))
	return t != nil && t.GetExternalKey() == key, nil
}

// flinkRevertWarning is logged once per process (warnRevertOnFlink).
var flinkRevertWarning sync.Once

// warnRevertOnFlink says, when the --runner flag selects Flink and a
// transform has a revert step, how to launch the job so that Revert sees
// only checkpointed failures. The transform cannot refuse: it cannot tell
// how the job will be launched (runner.Run marks the step; beamx.Run does
// not).
func warnRevertOnFlink() {
	switch strings.ToLower(strings.TrimSpace(*runners.Runner)) {
	case "flink", "flinkrunner":
		flinkRevertWarning.Do(func() {
			slog.Warn("async: on Flink a Reshuffle is no checkpoint, so Revert could run for a failure that a restore then replays, " +
				"unless the revert step requires stable input: runner.Run (github.com/asyncbeam/asyncbeam/runner) marks it for --runner=flink; " +
				"launch it with runner.Run, or runner.RunStableRevert (beamx.Run does not mark it)")
		})
	}
}

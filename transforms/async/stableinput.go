package async

// Stable input for the revert step: what makes Revert run only for failures
// no replay can undo on Flink, where a Reshuffle is no checkpoint.

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	v1pb "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// StableInputRequirement is the pipeline requirement that a ParDo marked
// with requires_stable_input declares (Beam's @RequiresStableInput).
const StableInputRequirement = "beam:requirement:pardo:stable_input:v1"

// RequireStableInput marks the revert steps of the async transforms in a
// pipeline's model (the steps that call the wrapped DoFn's Revert) as
// requiring stable input, declares StableInputRequirement, and returns how
// many steps it marked. Jobs for Flink get it on their way to the job
// server (runner.Run, and beamx.Run or ptest through package
// runner/portable); call it yourself only when you submit a model of your
// own, between graphx.Marshal and the submission.
//
// Why: Revert must see only failures no replay can undo. The revert step
// runs behind a Reshuffle, which prism and Dataflow commit before the step
// reads it. On Flink a Reshuffle is a rebalance, not a checkpoint: a task
// failure restores the last checkpoint and replays elements whose failure
// records Revert may have seen, and the replay may succeed. With stable
// input, Flink's streaming mode holds the step's input until a completed
// checkpoint holds it (read in its BufferingDoFnRunner).
//
// What a model of your own then needs, as Flink pipeline options at the top
// level of the job's options (Beam Go's own flags do not reach Flink):
// checkpointing_interval (Flink fails a marked job without exactly-once
// checkpointing), streaming=true, and enable_stable_input_drain=true, or a
// drained job (flink stop --drain) never runs the failure records held for
// the next checkpoint. Flink's batch mode (only bounded input) ignores the
// mark. prism and Beam Python's job service refuse the requirement.
func RequireStableInput(p *pipepb.Pipeline) (int, error) {
	marked := 0
	for id, t := range p.GetComponents().GetTransforms() {
		if t.GetSpec().GetUrn() != graphx.URNParDo {
			continue
		}
		var pardo pipepb.ParDoPayload
		if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pardo); err != nil {
			return 0, fmt.Errorf("async: reading the ParDoPayload of transform %s (%s): %w", id, t.GetUniqueName(), err)
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
			return 0, fmt.Errorf("async: writing the ParDoPayload of transform %s (%s): %w", id, t.GetUniqueName(), err)
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
	return isType(tp.GetEdge().GetFn().GetType(), reflect.TypeOf(revertFn{})), nil
}

// isType reports whether an encoded DoFn type is rt, or a pointer to it.
func isType(t *v1pb.Type, rt reflect.Type) bool {
	for t.GetKind() == v1pb.Type_PTR {
		t = t.GetElement()
	}
	key, _ := runtime.TypeKey(rt)
	return t != nil && t.GetExternalKey() == key
}

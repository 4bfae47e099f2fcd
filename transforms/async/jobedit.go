package async

// What the transform needs from the job that carries it to a job server
// (package runner/portable): on Flink, its revert steps marked as requiring
// stable input, and the end-of-input drain on every step that reads
// unbounded input. ParDo installs portable's hook so that beamx.Run and
// ptest send the job as runner.Run does.

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	v1pb "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"google.golang.org/protobuf/proto"

	"github.com/asyncbeam/asyncbeam/runner/portable"
)

// flagRunner is the runner the --runner flag names.
func flagRunner() portable.Kind { return portable.KindOfFlag(*runners.Runner) }

// installPortable makes a job for a job server pass through
// portable.Complete whatever launches it (portable.Install), when the
// --runner flag names one. It logs, once, when it cannot.
func installPortable() {
	switch strings.ToLower(strings.TrimSpace(*runners.Runner)) {
	case "flink", "flinkrunner", "spark", "sparkrunner", "universal", "portable", "portablerunner":
	default:
		return
	}
	if err := portable.Install(); err != nil {
		installLog.Do(func() { slog.Warn("async: " + err.Error()) })
	}
}

var installLog sync.Once

// editJob is the transform's portable.Edit: on Flink it marks the revert
// steps as requiring stable input and refuses what Flink would fail
// (portable.CheckStableInput) or lose (refuseUndrained).
func editJob(model *pipepb.Pipeline, job portable.Job) error {
	if job.Runner != portable.Flink {
		return nil
	}
	marked, err := RequireStableInput(model)
	if err != nil {
		return err
	}
	if err := portable.CheckStableInput(marked, job); err != nil {
		return err
	}
	switch {
	case marked > 0 && job.Streaming:
		slog.Info(fmt.Sprintf("async: marked %d revert step(s) as requiring stable input: on Flink, Revert sees only failures of a completed checkpoint", marked))
	case marked > 0:
		slog.Warn(fmt.Sprintf("async: %d revert step(s) in a job without unbounded input (--flink_batch_revert): Flink's batch mode ignores stable input, so a restart can replay an element Revert has seen fail", marked))
	}
	if !job.Streaming {
		return nil
	}
	return refuseUndrained(model)
}

// refuseUndrained refuses a Flink job with a step of the unbounded path
// (streamFn) built without the end-of-input drain and without
// WithoutEndOfInputDrain: built while --runner named another runner
// (universal, for one), it would lose the elements pending at the end of
// input without a word.
func refuseUndrained(model *pipepb.Pipeline) error {
	var names []string
	for id, t := range model.GetComponents().GetTransforms() {
		if t.GetSpec().GetUrn() != graphx.URNParDo {
			continue
		}
		cfg, ok, err := streamConfig(t)
		if err != nil {
			return fmt.Errorf("async: reading the DoFn of transform %s (%s): %w", id, t.GetUniqueName(), err)
		}
		if ok && !cfg.Drain && !cfg.DrainDeclined {
			names = append(names, path.Dir(t.GetUniqueName())) // the transform's scope, not its DoFn's step
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return fmt.Errorf("async: the job server is Flink, which drops the commit timers of elements still pending when the input ends "+
		"(or the job is drained), but %s ran without the end-of-input drain, so they would get no output and no failure record: "+
		"build the pipeline with --runner=flink (the drain is then on by default), add async.WithEndOfInputDrain(), "+
		"or async.WithoutEndOfInputDrain() to accept the loss", strings.Join(names, ", "))
}

// drainFields are the configuration fields refuseUndrained reads from a
// streamFn's shipped JSON.
type drainFields struct {
	Drain, DrainDeclined bool
}

// streamConfig reads the drain's fields of a ParDo whose DoFn is streamFn
// (ok), by its registered type and its shipped JSON.
func streamConfig(t *pipepb.PTransform) (drainFields, bool, error) {
	var pardo pipepb.ParDoPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pardo); err != nil {
		return drainFields{}, false, err
	}
	spec := pardo.GetDoFn()
	if spec.GetUrn() != graphx.URNDoFn {
		return drainFields{}, false, nil
	}
	var tp v1pb.TransformPayload
	if err := protox.DecodeBase64(string(spec.GetPayload()), &tp); err != nil {
		return drainFields{}, false, err
	}
	if !isType(tp.GetEdge().GetFn().GetType(), reflect.TypeOf(streamFn{})) {
		return drainFields{}, false, nil
	}
	var f drainFields
	if err := json.Unmarshal([]byte(tp.GetEdge().GetFn().GetOpt()), &f); err != nil {
		return drainFields{}, false, err
	}
	return f, true, nil
}

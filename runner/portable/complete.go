package portable

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Job is what an Edit knows of the job being sent.
type Job struct {
	// Runner is the job server's runner, where known.
	Runner Kind
	// Streaming: the model has an unbounded PCollection, which makes Flink
	// run it in streaming mode.
	Streaming bool
	// Checkpointing is --checkpointing_interval (0: none).
	Checkpointing time.Duration
	// BatchRevert is --flink_batch_revert.
	BatchRevert bool
	// Options are the top-level options sent, by snake_case name.
	Options map[string]*structpb.Value
}

// An Edit changes or refuses a job's model before it is sent; its error
// stops the submission and reaches the launcher's caller.
type Edit func(model *pipepb.Pipeline, job Job) error

var edits struct {
	sync.Mutex
	list []Edit
}

// AddEdit adds an edit that Complete applies to every job, in the order
// added. Packages add theirs in init.
func AddEdit(e Edit) {
	edits.Lock()
	defer edits.Unlock()
	edits.list = append(edits.list, e)
}

// Complete applies the edits to the job's model and sets its top-level
// options for runner kind (see the package doc), from the flags.
func Complete(kind Kind, req *jobpb.PrepareJobRequest) error {
	return complete(kind, req, *Checkpointing, *BatchRevert, RunnerOptions)
}

func complete(kind Kind, req *jobpb.PrepareJobRequest, interval time.Duration, batchRevert bool, user []string) error {
	interval = checkpointingOf(interval, user)
	job := Job{Runner: kind, Streaming: HasUnbounded(req.GetPipeline()), Checkpointing: interval, BatchRevert: batchRevert}
	opts, err := topLevel(kind, job.Streaming, interval, user)
	if err != nil {
		return err
	}
	job.Options = opts
	edits.Lock()
	list := append([]Edit(nil), edits.list...)
	edits.Unlock()
	for _, e := range list {
		if err := e(req.GetPipeline(), job); err != nil {
			return err
		}
	}
	if interval > 0 && kind != Flink {
		slog.Warn(fmt.Sprintf("portable: --checkpointing_interval is for Flink; this job server (runner %q) does not read it", string(kind)))
	}
	if len(opts) == 0 {
		return nil
	}
	if req.PipelineOptions == nil {
		req.PipelineOptions = &structpb.Struct{}
	}
	if req.PipelineOptions.Fields == nil {
		req.PipelineOptions.Fields = map[string]*structpb.Value{}
	}
	names := make([]string, 0, len(opts))
	for name, v := range opts {
		req.PipelineOptions.Fields[Key(name)] = v
		names = append(names, name+"="+valueText(v))
	}
	sort.Strings(names)
	slog.Info("portable: job options sent at the top level: " + strings.Join(names, " "))
	return nil
}

// valueText prints an option's value for the log.
func valueText(v *structpb.Value) string {
	b, err := v.MarshalJSON()
	if err != nil {
		return v.String()
	}
	return string(b)
}

// HasUnbounded reports whether the model has an unbounded PCollection, as
// Flink's portable runner chooses its streaming translator.
func HasUnbounded(model *pipepb.Pipeline) bool {
	for _, pc := range model.GetComponents().GetPcollections() {
		if pc.GetIsBounded() == pipepb.IsBounded_UNBOUNDED {
			return true
		}
	}
	return false
}

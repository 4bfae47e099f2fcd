package portable

import (
	"errors"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/types/known/structpb"
)

func model(bounded ...pipepb.IsBounded_Enum) *pipepb.Pipeline {
	p := &pipepb.Pipeline{Components: &pipepb.Components{Pcollections: map[string]*pipepb.PCollection{}}}
	for i, b := range bounded {
		p.Components.Pcollections[string(rune('a'+i))] = &pipepb.PCollection{IsBounded: b}
	}
	return p
}

func TestHasUnbounded(t *testing.T) {
	for _, tc := range []struct {
		p    *pipepb.Pipeline
		want bool
	}{
		{model(), false},
		{model(pipepb.IsBounded_BOUNDED, pipepb.IsBounded_BOUNDED), false},
		{model(pipepb.IsBounded_BOUNDED, pipepb.IsBounded_UNBOUNDED), true},
	} {
		if got := HasUnbounded(tc.p); got != tc.want {
			t.Errorf("HasUnbounded(%v) = %v; want %v", tc.p.GetComponents().GetPcollections(), got, tc.want)
		}
	}
}

// TestComplete: the options go at the top level of the request's options,
// beside Beam Go's own, and every edit sees the job; an edit's error stops
// the job before anything is set.
func TestComplete(t *testing.T) {
	defer func(old []Edit) { edits.list = old }(edits.list)
	var seen []Job
	edits.list = []Edit{func(_ *pipepb.Pipeline, job Job) error { seen = append(seen, job); return nil }}
	req := &jobpb.PrepareJobRequest{Pipeline: model(pipepb.IsBounded_UNBOUNDED), PipelineOptions: &structpb.Struct{
		Fields: map[string]*structpb.Value{"beam:option:go_options:v1": structpb.NewStringValue("kept")}}}
	if err := complete(Flink, req, 0, false, []string{"max_bundle_size=10"}); err != nil {
		t.Fatal(err)
	}
	f := req.GetPipelineOptions().GetFields()
	for key, want := range map[string]string{
		"beam:option:go_options:v1": `"kept"`, "beam:option:streaming:v1": "true", "beam:option:max_bundle_size:v1": "10",
		"beam:option:shutdown_sources_after_idle_ms:v1": "15000", "beam:option:finish_bundle_before_checkpointing:v1": "true",
	} {
		if got := f[key]; got == nil || valueText(got) != want {
			t.Errorf("option %s = %v; want %s", key, got, want)
		}
	}
	if len(seen) != 1 || !seen[0].Streaming || seen[0].Runner != Flink || valueText(seen[0].Options["max_bundle_size"]) != "10" {
		t.Errorf("edits saw %+v; want one Flink streaming job with its options", seen)
	}

	refused := errors.New("refused")
	edits.list = []Edit{func(*pipepb.Pipeline, Job) error { return refused }}
	req = &jobpb.PrepareJobRequest{Pipeline: model(pipepb.IsBounded_UNBOUNDED)}
	if err := complete(Flink, req, 0, false, nil); !errors.Is(err, refused) {
		t.Errorf("complete with a refusing edit = %v; want %v", err, refused)
	}
	if len(req.GetPipelineOptions().GetFields()) != 0 {
		t.Errorf("a refused job got options %v; want none", req.GetPipelineOptions())
	}
}

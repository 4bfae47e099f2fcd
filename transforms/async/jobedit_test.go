package async

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/runner/portable"
)

func TestResolveDrain(t *testing.T) {
	for _, tc := range []struct {
		unbounded bool
		runner    portable.Kind
		opts      []Option
		want      bool
	}{
		{true, portable.Flink, nil, true},
		{true, portable.Flink, []Option{WithoutEndOfInputDrain()}, false},
		{true, portable.Flink, []Option{WithEndOfInputDrain()}, true},
		{true, portable.Unknown, nil, false},
		{true, portable.Unknown, []Option{WithEndOfInputDrain()}, true},
		{true, portable.Spark, nil, false},
		{false, portable.Flink, nil, false},                                                      // bounded input needs none
		{true, portable.Flink, []Option{WithEndOfInputDrain(), WithoutEndOfInputDrain()}, false}, // the last one given wins
	} {
		set, err := resolve(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		set.resolveDrain(tc.unbounded, tc.runner)
		if set.drain != tc.want {
			t.Errorf("unbounded %v, runner %q, %d option(s): drain %v; want %v", tc.unbounded, tc.runner, len(tc.opts), set.drain, tc.want)
		}
	}
}

// streamModel is the model of the transform over an unbounded input, with
// opts.
func streamModel(t *testing.T, opts ...Option) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	start := time.Now().Add(time.Hour)
	ticks := periodic.Impulse(s, start, start.Add(time.Second), time.Second, false)
	in := beam.ParDo(s, func(b []byte) (string, int) { return "k", len(b) }, ticks)
	ParDo(s, registeredLabel, in, opts...)
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := graphx.CreateEnvironment(context.Background(), "beam:env:loopback:v1", func(context.Context) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	model, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	return model
}

// TestEditJobRefusesUndrained: a Flink streaming job whose stream step has
// neither the drain nor WithoutEndOfInputDrain is refused, naming the step;
// the other jobs pass.
func TestEditJobRefusesUndrained(t *testing.T) {
	flinkStreaming := portable.Job{Runner: portable.Flink, Streaming: true}
	for _, tc := range []struct {
		name    string
		opts    []Option
		job     portable.Job
		wantErr string
	}{
		{"undrained", nil, flinkStreaming, "async.ParDo ran without the end-of-input drain"},
		{"drained", []Option{WithEndOfInputDrain()}, flinkStreaming, ""},
		{"declined", []Option{WithoutEndOfInputDrain()}, flinkStreaming, ""},
		{"not Flink", nil, portable.Job{Runner: portable.Unknown, Streaming: true}, ""},
	} {
		err := editJob(streamModel(t, tc.opts...), tc.job)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: editJob = %v; want nil", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: editJob = %v; want an error with %q", tc.name, err, tc.wantErr)
		}
	}
}

package async

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// marshal builds the model of a pipeline of keyed input through the async
// transform with fn, with its failure output when failures is set.
func marshal(t *testing.T, fn any, failures bool) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	in := beam.ParDo(s, func(v int) (string, int) { return "k", v }, beam.Create(s, 1, 2, 3))
	if failures {
		ParDoWithFailures(s, fn, in)
	} else {
		ParDo(s, fn, in)
	}
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

// parDos returns the ParDo payloads of the model's transforms, by id.
func parDos(t *testing.T, p *pipepb.Pipeline) map[string]*pipepb.ParDoPayload {
	t.Helper()
	out := map[string]*pipepb.ParDoPayload{}
	for id, tr := range p.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() != graphx.URNParDo {
			continue
		}
		var pardo pipepb.ParDoPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pardo); err != nil {
			t.Fatal(err)
		}
		out[id] = &pardo
	}
	return out
}

// stableSteps lists the unique names of the ParDos marked as requiring
// stable input.
func stableSteps(t *testing.T, p *pipepb.Pipeline) []string {
	t.Helper()
	var names []string
	for id, pardo := range parDos(t, p) {
		if pardo.GetRequiresStableInput() {
			names = append(names, p.GetComponents().GetTransforms()[id].GetUniqueName())
		}
	}
	return names
}

func countRequirement(p *pipepb.Pipeline) int {
	n := 0
	for _, r := range p.GetRequirements() {
		if r == StableInputRequirement {
			n++
		}
	}
	return n
}

// TestRequireStableInput: the revert step, and only it, is marked, with
// the requirement declared once, also when marked twice; a pipeline
// without a revert step is left as it was.
func TestRequireStableInput(t *testing.T) {
	tests := []struct {
		name       string
		fn         any
		failures   bool
		wantMarked int
	}{
		{"a fn with Revert and the failure output", &reverting{gated: gated{Name: "stable"}}, true, 1},
		{"a fn with Revert, failures not taken: no revert step", &reverting{gated: gated{Name: "stable"}}, false, 0},
		{"a fn without Revert", &gated{Name: "stable"}, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := marshal(t, tc.fn, tc.failures)
			before := proto.Clone(p)
			for round := 1; round <= 2; round++ {
				n, err := RequireStableInput(p)
				if err != nil {
					t.Fatal(err)
				}
				if n != tc.wantMarked {
					t.Errorf("round %d: marked %d steps; want %d", round, n, tc.wantMarked)
				}
				got := stableSteps(t, p)
				if len(got) != tc.wantMarked {
					t.Errorf("round %d: steps requiring stable input %q; want %d", round, got, tc.wantMarked)
				}
				for _, name := range got { // the revert step itself, not a ParDo of its Reshuffle
					if !strings.Contains(name, "revertFn") {
						t.Errorf("round %d: step %q requires stable input; want only the revertFn step", round, name)
					}
				}
				if got, want := countRequirement(p), min(tc.wantMarked, 1); got != want {
					t.Errorf("round %d: requirement %s declared %d times; want %d", round, StableInputRequirement, got, want)
				}
			}
			if tc.wantMarked == 0 && !proto.Equal(before, p) {
				t.Errorf("a pipeline without a revert step changed")
			}
		})
	}
}

// TestRequireStableInputUnreadableDoFn: a Go DoFn whose payload does not
// decode is refused with the transform's name, not passed over (it could be
// a revert step that would then run unmarked).
func TestRequireStableInputUnreadableDoFn(t *testing.T) {
	p := marshal(t, &reverting{gated: gated{Name: "stable"}}, true)
	var broken string
	for id, pardo := range parDos(t, p) {
		if pardo.GetDoFn().GetUrn() != graphx.URNDoFn {
			continue
		}
		pardo.DoFn.Payload = []byte("not base64 of a payload!")
		b, err := proto.Marshal(pardo)
		if err != nil {
			t.Fatal(err)
		}
		p.GetComponents().GetTransforms()[id].Spec.Payload, broken = b, id
		break
	}
	if broken == "" {
		t.Fatal("no Go DoFn in the pipeline to break")
	}
	n, err := RequireStableInput(p)
	if err == nil || !strings.Contains(err.Error(), broken) {
		t.Errorf("RequireStableInput with transform %s unreadable = %d, %v; want an error naming it", broken, n, err)
	}
}

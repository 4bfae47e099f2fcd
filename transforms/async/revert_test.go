package async

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"
)

// TestRevertRunsBehindACheckpoint: the revert step reads the failure records
// through a reshuffle, so that no runner fuses it into the bundle that writes
// them: Revert must see only records that bundle has committed. Without a
// Revert method, or without a failure output, there is no revert step.
func TestRevertRunsBehindACheckpoint(t *testing.T) {
	tests := []struct {
		name     string
		fn       any
		failures bool
		want     bool // a revert step
	}{
		{"Revert and a failure output", &reverting{}, true, true},
		{"no Revert method", &gated{}, true, false},
		{"no failure output", &reverting{}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			kv := beam.ParDo(s, func(v int) (string, int) { return "k", v }, beam.Create(s, 1, 2))
			if tc.failures {
				ParDoWithFailures(s, tc.fn, kv)
			} else {
				ParDo(s, tc.fn, kv)
			}
			edges, _, err := p.Build()
			if err != nil {
				t.Fatal(err)
			}
			producer := map[*graph.Node]*graph.MultiEdge{}
			for _, e := range edges {
				for _, out := range e.Output {
					producer[out.To] = e
				}
			}
			found := false
			for _, e := range edges {
				if e.Op != graph.ParDo || !strings.HasSuffix(e.DoFn.Name(), "revertFn") {
					continue
				}
				found = true
				if from := producer[e.Input[0].From]; from == nil || from.Op != graph.Reshuffle {
					t.Errorf("the revert step reads %v; want the output of a Reshuffle", from)
				}
			}
			if found != tc.want {
				t.Errorf("revert step present = %v, want %v", found, tc.want)
			}
		})
	}
}

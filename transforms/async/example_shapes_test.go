package async_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// wordsOf is a DoFn that feeds a GroupByKey: it emits pairs, and returns
// an error for an empty line (a failure record under ParDoWithFailures).
func wordsOf(ctx context.Context, line int, text string, emit func(string, int)) error {
	if text == "" {
		return async.Permanent(fmt.Errorf("line %d is empty", line))
	}
	for _, w := range strings.Fields(text) {
		emit(w, 1)
	}
	return nil
}

// numberedLine keys the example's lines by their number.
func numberedLine(i int) (int, string) { return i, []string{"a b", "b", ""}[i] }

// countText prints a word's count.
func countText(w string, n int) string { return fmt.Sprintf("%s=%d", w, n) }

func init() {
	register.Function1x2(numberedLine)
	register.Function2x1(countText)
	register.Function4x1(wordsOf)
	register.Emitter2[string, int]()
}

// A fn with a KV emitter, as beam.ParDo takes it: its pairs form a
// PCollection<KV<string, int>> that a GroupByKey (here stats.SumPerKey)
// can follow; the empty line is a failure record.
func ExampleParDoWithFailures() {
	p, s := beam.NewPipelineWithRoot()
	lines := beam.ParDo(s, numberedLine, beam.Create(s, 0, 1, 2))
	words, failures := async.ParDoWithFailures(s, wordsOf, lines)
	counts := beam.ParDo(s, countText, stats.SumPerKey(s, words))
	passert.Equals(s, counts, "a=1", "b=2")
	passert.Count(s, failures, "failures", 1)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

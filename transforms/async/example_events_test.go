package async_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// urgency is a priority function: larger values start first.
func urgency(v int) int { return v % 3 }

// longCall reports its progress while it works.
type longCall struct{}

func (*longCall) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	for step := 1; step <= 4; step++ {
		time.Sleep(time.Millisecond)
		if err := async.ReportProgress(ctx, float64(step)/4, fmt.Sprintf("step %d of 4", step)); err != nil {
			return err
		}
	}
	emit(fmt.Sprint(key, ":", v))
	return nil
}

func init() {
	register.Function1x1(urgency)
	register.DoFn4x1[context.Context, string, int, func(string), error](&longCall{})
}

// Each key's labels are committed in the order the key's elements arrived,
// although the calls run 16 at a time and finish in any order.
func ExampleWithOrdered() {
	p, s := beam.NewPipelineWithRoot()
	labels := async.ParDo(s, &slowLabel{SleepMs: 5}, input(s, 100, 10),
		async.WithOrdered(), async.WithParallelism(16))
	passert.Count(s, labels, "labels", 100)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

// When calls wait for a slot, those with the highest urgency start first.
func ExampleWithPriority() {
	p, s := beam.NewPipelineWithRoot()
	labels := async.ParDo(s, &slowLabel{SleepMs: 5}, input(s, 100, 10),
		async.WithPriority(urgency), async.WithParallelism(4))
	passert.Count(s, labels, "labels", 100)
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	fmt.Println("ok")
	// Output: ok
}

// The JSON Lines listener writes every element's transitions to a file on
// the worker (here, this process: prism runs in-process).
func ExampleWithListener() {
	dir, _ := os.MkdirTemp("", "events")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "events.jsonl")

	p, s := beam.NewPipelineWithRoot()
	async.ParDo(s, &slowLabel{SleepMs: 1}, input(s, 20, 4),
		async.WithListener(&async.JSONLinesListener{Path: path}))
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	events, err := async.ReadEvents(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	count := map[async.EventType]int{}
	for _, e := range events {
		count[e.Type]++
	}
	fmt.Println("accepted:", count[async.EventAccepted], "committed:", count[async.EventCommitted])
	// Output: accepted: 20 committed: 20
}

// A long call reports how far it has got; the reports reach the listener,
// and the metrics call_progress_permille and progress_reports.
func ExampleReportProgress() {
	dir, _ := os.MkdirTemp("", "timings")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "timings.jsonl")

	p, s := beam.NewPipelineWithRoot()
	async.ParDo(s, &longCall{}, input(s, 10, 2),
		async.WithListener(&async.TimingListener{Path: path}))
	if err := ptest.Run(p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}
	timings, err := async.ReadTimings(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	ran := 0
	for _, t := range timings {
		if t.Outcome == "committed" && t.Running >= 4*time.Millisecond {
			ran++
		}
	}
	fmt.Println("elements that ran at least 4 ms:", ran)
	// Output: elements that ran at least 4 ms: 10
}

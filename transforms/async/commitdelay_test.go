package async

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
)

// bundleContext is a context whose metric updates Beam keeps, as in a
// bundle, and distribution reads them back.
func bundleContext() context.Context {
	return beammetrics.SetPTransformID(beammetrics.SetBundleID(context.Background(), "bundle"), "transform")
}

// distribution returns the count and sum of the distribution name updated
// with ctx.
func distribution(t *testing.T, ctx context.Context, name string) (count, sum int64) {
	t.Helper()
	err := beammetrics.Extractor{DistributionInt64: func(l beammetrics.Labels, c, s, _, _ int64) {
		if l.Name() == name {
			count, sum = count+c, sum+s
		}
	}}.ExtractFrom(beammetrics.GetStore(ctx))
	if err != nil {
		t.Fatal(err)
	}
	return count, sum
}

// TestCommitDelayOncePerCommittedElementUnbounded: on unbounded input an
// element whose first attempt failed and was retried through bag state has
// one commit delay, from its successful call's end to its commit; the
// latency distribution has both attempts.
func TestCommitDelayOncePerCommittedElementUnbounded(t *testing.T) {
	name := uniqueName(t)
	h := newHarness(t, &gated{Name: name}, stringKey, WithMaxAttempts(2), WithBackoff(FixedBackoff(time.Second)), WithCallbackFrequency(10*time.Second))
	f := h.stream()
	g := &gates{name: name, key: "a"}
	defer g.openRest(1)
	ctx := bundleContext()
	book.planErrors(gateID(name, "a", 1), errors.New("transient"))
	fire := func() []string {
		t.Helper()
		f.StartBundle(ctx, nil, nil, nil)
		if err := f.OnTimer(ctx, h.st("a"), h.tm("a"), "a", beamtimers.Context{Family: f.Commit.Family}, h.emitter("a"), h.fail, nil); err != nil {
			t.Fatal(err)
		}
		out := h.early["a"]
		delete(h.early, "a")
		return out
	}
	f.StartBundle(ctx, nil, nil, nil)
	if err := f.ProcessElement(ctx, mtime.FromTime(h.clock.Now()), h.st("a"), h.tm("a"), "a", 1, h.emitter("a"), h.fail, nil); err != nil {
		t.Fatal(err)
	}
	g.open(1)
	h.waitFinished("a", 1)
	fire() // the failed attempt is written back
	h.clock.Advance(time.Second)
	fire() // the retry starts
	h.waitFinished("a", 1)
	h.clock.Advance(3 * time.Second)
	if got := fire(); len(got) != 1 {
		t.Fatalf("commit emitted %v, want one output", got)
	}
	if n, sum := distribution(t, ctx, MetricCommitDelay); n != 1 || sum != 3000 {
		t.Errorf("commit_delay_ms has %d samples summing to %d ms; want 1 of 3000: one per committed element, from its call's end", n, sum)
	}
	if n, _ := distribution(t, ctx, MetricLatency); n != 2 {
		t.Errorf("call_latency_ms has %d samples; want 2, one per attempt's task", n)
	}
}

// TestCommitDelayOncePerCommittedElementBounded: on bounded input an
// element that fails for good has no commit delay; one committed has one.
func TestCommitDelayOncePerCommittedElementBounded(t *testing.T) {
	name := uniqueName(t)
	h := newHarnessFailures(t, true, &gated{Name: name}, stringKey)
	g := &gates{name: name, key: "a"}
	defer g.openRest(2)
	book.planErrors(gateID(name, "a", 2), Permanent(errors.New("bad record")))
	g.openRest(2)
	ctx := bundleContext()
	f := h.bundleFn()
	var outputs, failures int
	emit := func(beam.EventTime, beam.Z) { outputs++ }
	fail := func(beam.EventTime, Failure) { failures++ }
	if err := f.StartBundle(ctx, emit, fail); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 2; v++ {
		if err := f.ProcessElement(ctx, 0, "a", v, emit, fail); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.FinishBundle(ctx, emit, fail); err != nil {
		t.Fatal(err)
	}
	if outputs != 1 || failures != 1 {
		t.Fatalf("%d outputs and %d failures; want 1 and 1", outputs, failures)
	}
	if n, _ := distribution(t, ctx, MetricCommitDelay); n != 1 {
		t.Errorf("commit_delay_ms has %d samples; want 1, the committed element's", n)
	}
}

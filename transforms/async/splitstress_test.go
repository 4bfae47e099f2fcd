package async

// A stress run of prism's bundle splitting on the unbounded path. Prism
// v2.77.0 released a key of a split bundle's residual while the primary
// still held it, so two bundles ran one key at once and one's bag writes
// were lost; the transform then had to turn splitting off
// (prism_disable_sdf_split). Prism v2.78.0 keeps the key with the primary,
// and this run shows the transform needs nothing more there. Off unless
// -prism.splitstress gives a number of runs.

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

var splitStress = flag.Int("prism.splitstress", 0, "runs of TestPrismSplitStress (0: skip)")

// burst turns each impulse into PerTick elements of Keys keys, numbered
// from the impulse's timestamp, each with a value of Bytes bytes.
type burst struct {
	PerTick, Keys, Bytes int
	StartMs, IntervalMs  int64
}

func (f *burst) ProcessElement(ts beam.EventTime, _ []byte, emit func(string, []byte)) {
	tick := int((int64(ts) - f.StartMs) / f.IntervalMs)
	for i := 0; i < f.PerTick; i++ {
		n := tick*f.PerTick + i
		v := make([]byte, f.Bytes)
		copy(v, fmt.Sprint(n))
		emit(fmt.Sprintf("k%d", n%f.Keys), v)
	}
}

// sizeLabel is a slow call that names its element.
func sizeLabel(key string, v []byte) string {
	time.Sleep(20 * time.Millisecond)
	n := 0
	fmt.Sscan(string(v[:clear0(v)]), &n)
	return fmt.Sprintf("%s:%d:%d", key, n, len(v))
}

// clear0 is the length of v's text before its first zero byte.
func clear0(v []byte) int {
	for i, b := range v {
		if b == 0 {
			return i
		}
	}
	return len(v)
}

func init() {
	register.DoFn3x0[beam.EventTime, []byte, func(string, []byte)](&burst{})
	register.Function2x1(sizeLabel)
	register.Emitter2[string, []byte]()
}

// TestPrismSplitStress runs a stream whose ProcessElement waits for room
// (a small pool, WithMaxWait), which makes prism split its stalled bundles,
// with large values over few keys: every output exactly once, each run,
// and prism split some bundles.
func TestPrismSplitStress(t *testing.T) {
	if *splitStress == 0 {
		t.Skip("-prism.splitstress=N runs it N times")
	}
	splits := &splitCounter{Handler: slog.Default().Handler()}
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(splits))
	const ticks, perTick, keys, bytes = 8, 25, 3, 256 << 10
	interval := 200 * time.Millisecond
	for run := 0; run < *splitStress; run++ {
		start := time.Now().Truncate(time.Millisecond)
		p, s := beam.NewPipelineWithRoot()
		impulses := periodic.Impulse(s, start, start.Add(ticks*interval), interval, false)
		elems := beam.ParDo(s, &burst{PerTick: perTick, Keys: keys, Bytes: bytes, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
		out := ParDo(s, sizeLabel, elems, WithParallelism(2), WithMaxItemsToBuffer(2), WithMaxItemsHeld(4),
			WithMaxWait(500*time.Millisecond), WithCallbackFrequency(200*time.Millisecond))
		var want []any
		for n := 0; n < ticks*perTick; n++ {
			want = append(want, fmt.Sprintf("k%d:%d:%d", n%keys, n, bytes))
		}
		passert.EqualsList(s, out, want)
		before := splits.n.Load()
		if err := ptest.Run(p); err != nil {
			t.Errorf("run %d of %d: %v", run+1, *splitStress, err)
		}
		t.Logf("run %d of %d: prism split %d bundle(s)", run+1, *splitStress, splits.n.Load()-before)
	}
	if splits.n.Load() == 0 {
		t.Errorf("prism split no bundle in %d runs: the stress did not stress what it is for", *splitStress)
	}
}

// splitCounter counts prism's "split elements" records (debug level) and
// passes the others on to Handler as before.
type splitCounter struct {
	slog.Handler
	n atomic.Int64
}

func (h *splitCounter) Enabled(ctx context.Context, l slog.Level) bool {
	return l == slog.LevelDebug || h.Handler.Enabled(ctx, l)
}

func (h *splitCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "split elements" {
		h.n.Add(1)
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

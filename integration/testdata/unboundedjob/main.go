// Command unboundedjob runs the async transform on an unbounded source (a
// periodic impulse) and counts, in a DoFn after it, how often each output
// arrives. It prints one line for the integration tests:
//
//	outputs: want=N distinct=D total=T missing=M unexpected=U
//
// Counting in a DoFn, not with passert, is deliberate: on Beam Python's
// portable job service, in our runs, passert reported extra entries over a
// periodic.Impulse source (for a plain ParDo too), while a DoFn after the
// transform saw each output once. The DoFn writes what it sees to files
// (testdata/bundlefile). Neither runner retries a bundle here; a retried
// bundle would write its outputs twice and fail the count.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/integration/testdata/bundlefile"
	"github.com/asyncbeam/asyncbeam/runner"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

var (
	ticks     = flag.Int("ticks", 20, "impulses of the source")
	perTick   = flag.Int("per_tick", 10, "elements per impulse")
	keys      = flag.Int("keys", 7, "keys the elements are spread over")
	interval  = flag.Duration("interval", 100*time.Millisecond, "time between impulses")
	callTime  = flag.Duration("call", 50*time.Millisecond, "duration of each call")
	frequency = flag.Duration("callback_frequency", 200*time.Millisecond, "the transform's callback frequency")
	drain     = flag.Bool("drain", false, "the transform's end-of-input drain (WithEndOfInputDrain; on by default for --runner=flink)")
	noDrain   = flag.Bool("no_drain", false, "no end-of-input drain, even on Flink (WithoutEndOfInputDrain)")
	chain     = flag.Bool("chain", false, "a second async transform after the first, keyed by the element's number (int64)")
)

// fanOut turns each impulse into PerTick keyed elements, numbered from the
// impulse's timestamp.
type fanOut struct {
	PerTick, Keys       int
	StartMs, IntervalMs int64
}

func (f *fanOut) ProcessElement(ts beam.EventTime, _ []byte, emit func(string, int)) {
	tick := int((int64(ts) - f.StartMs) / f.IntervalMs)
	for i := 0; i < f.PerTick; i++ {
		n := tick*f.PerTick + i
		emit(fmt.Sprintf("k%03d", n%f.Keys), n)
	}
}

// slowLabel is the wrapped fn: a call of CallMs that labels its element.
type slowLabel struct{ CallMs int }

func (f *slowLabel) ProcessElement(ctx context.Context, key string, n int, emit func(string)) error {
	select {
	case <-time.After(time.Duration(f.CallMs) * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	emit(fmt.Sprintf("%s:%d", key, n))
	return nil
}

// byNumber keys a label by its element's number, for the second transform
// of --chain: another key type than the first's.
func byNumber(label string) (int64, string) {
	var n int64
	fmt.Sscanf(label[strings.IndexByte(label, ':')+1:], "%d", &n)
	return n, label
}

// relay is the second transform's fn: it passes the label on.
func relay(_ int64, label string) string { return label }

// writeOutputs writes the outputs of each bundle to a file of its own in
// Dir (the worker runs on this machine: LOOPBACK or embedded).
type writeOutputs struct {
	Dir   string
	lines bundlefile.Lines
}

func (f *writeOutputs) ProcessElement(out string) { f.lines.Add(out) }

func (f *writeOutputs) FinishBundle() error { return f.lines.Flush(f.Dir) }

func init() {
	register.DoFn3x0[beam.EventTime, []byte, func(string, int)](&fanOut{})
	register.DoFn4x1[context.Context, string, int, func(string), error](&slowLabel{})
	register.DoFn1x0[string](&writeOutputs{})
	register.Function1x2(byNumber)
	register.Function2x1(relay)
	register.Emitter1[string]()
	register.Emitter2[string, int]()
}

func main() {
	flag.Parse()
	beam.Init()
	if *interval < time.Millisecond || *interval%time.Millisecond != 0 {
		log.Fatalf("--interval must be a whole number of milliseconds, got %v", *interval)
	}
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	// The source starts 3 s from now, past the job's submission, so that
	// its ticks come spread out rather than in one catch-up burst.
	start := time.Now().Truncate(time.Second).Add(3 * time.Second)
	p, s := beam.NewPipelineWithRoot()
	impulses := periodic.Impulse(s, start, start.Add(time.Duration(*ticks)*(*interval)), *interval, false)
	elems := beam.ParDo(s, &fanOut{PerTick: *perTick, Keys: *keys, StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
	opts := []async.Option{async.WithParallelism(8), async.WithCallbackFrequency(*frequency)}
	switch {
	case *drain && *noDrain:
		return fmt.Errorf("--drain and --no_drain: pick one")
	case *drain:
		opts = append(opts, async.WithEndOfInputDrain())
	case *noDrain:
		opts = append(opts, async.WithoutEndOfInputDrain())
	}
	out := async.ParDo(s, &slowLabel{CallMs: int(callTime.Milliseconds())}, elems, opts...)
	dir, err := os.MkdirTemp("", "unboundedjob-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *chain {
		out = async.ParDo(s, relay, beam.ParDo(s, byNumber, out), opts...)
	}
	beam.ParDo0(s, &writeOutputs{Dir: dir}, out)
	if _, err := runner.Run(context.Background(), p); err != nil {
		return fmt.Errorf("pipeline failed: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "bundle-*.txt"))
	if err != nil {
		return err
	}
	seen := map[string]int{}
	total := 0
	for _, name := range files {
		buf, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		for _, line := range strings.Fields(string(buf)) {
			seen[line]++
			total++
		}
	}
	want := *ticks * *perTick
	missing := 0
	for n := 0; n < want; n++ {
		if seen[fmt.Sprintf("k%03d:%d", n%*keys, n)] == 0 {
			missing++
		}
	}
	unexpected := len(seen) - (want - missing)
	fmt.Printf("outputs: want=%d distinct=%d total=%d missing=%d unexpected=%d\n", want, len(seen), total, missing, unexpected)
	return nil
}

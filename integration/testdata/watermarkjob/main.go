// Command watermarkjob asks, with plain Beam Go DoFns only, whether a runner
// fires an event-time timer while elements that the timer's input watermark
// must wait for are still to come. It prints one line for the integration
// tests (TestEarlyEventTimeTimersOnPythonJobService):
//
//	stage2: elements=N late=L fired=F
//
// The pipeline: a periodic.Impulse of --ticks elements, all under one key,
// into holdFirst (stage 1), which keeps the first element in a bag behind a
// processing-time timer --delay ahead and passes the others straight
// through, then (after a Reshuffle with --shuffle) into countLate (stage 2),
// which sets an event-time timer an hour before the end of the global
// window and counts the elements that arrive after it fired (late). Under
// the Beam model the timer fires only when the input watermark passes it,
// after the source has ended and holdFirst's timer, which holds the
// watermark at its output timestamp, has fired: late=0.
//
// countLate writes what it sees to files (testdata/bundlefile).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/asyncbeam/asyncbeam/integration/testdata/bundlefile"
)

var (
	ticks    = flag.Int("ticks", 15, "elements of the source")
	interval = flag.Duration("interval", 200*time.Millisecond, "time between elements")
	delay    = flag.Duration("delay", 500*time.Millisecond, "how far ahead holdFirst's processing-time timer is set")
	shuffle  = flag.Bool("shuffle", false, "a Reshuffle between the stages (a stage boundary on every runner)")
)

// index keys each impulse by its number, computed from its timestamp.
type index struct{ StartMs, IntervalMs int64 }

func (f *index) ProcessElement(ts beam.EventTime, _ []byte) (string, int64) {
	return "k", (int64(ts) - f.StartMs) / f.IntervalMs
}

// holdFirst keeps the first element of its key in Held and emits it when
// Flush fires; it emits every later element at once, setting no timer.
// Flush's output timestamp is its firing time (Beam Go's default, written
// out): at the element's timestamp, the Python job service would fire it at
// once (see the test's doc).
//
// State and timer names are explicit in both DoFns: with Beam Go's empty
// timer family names the Python job service keeps the timers of both under
// one buffer ("timers:"), files countLate's as holdFirst's processing-time
// ones, never finds them due, and ends the job with "A total of 1
// time-pending bundles did not execute".
type holdFirst struct {
	Held    state.Bag[int64]
	Seen    state.Value[bool]
	Flush   timers.ProcessingTime
	DelayMs int64
}

func (f *holdFirst) ProcessElement(sp state.Provider, tp timers.Provider, _ string, n int64, emit func(string, int64)) error {
	seen, _, err := f.Seen.Read(sp)
	if err != nil {
		return err
	}
	if seen {
		emit("all", n)
		return nil
	}
	if err := f.Seen.Write(sp, true); err != nil {
		return err
	}
	if err := f.Held.Add(sp, n); err != nil {
		return err
	}
	fire := time.Now().Add(time.Duration(f.DelayMs) * time.Millisecond)
	f.Flush.Set(tp, fire, timers.WithOutputTimestamp(fire))
	return nil
}

func (f *holdFirst) OnTimer(sp state.Provider, _ timers.Provider, _ string, _ timers.Context, emit func(string, int64)) error {
	held, _, err := f.Held.Read(sp)
	if err != nil {
		return err
	}
	for _, n := range held {
		emit("all", n)
	}
	return f.Held.Clear(sp)
}

// countLate sets End, an event-time timer an hour before the end of the
// global window, at each element until End fires, and records each element
// as "elem N", or "late N" once End has fired, and End's firing as "fired":
// one file per bundle in Dir (the worker runs on this machine: LOOPBACK or
// embedded).
type countLate struct {
	Fired state.Value[bool]
	End   timers.EventTime
	Dir   string
	lines bundlefile.Lines
}

func (f *countLate) ProcessElement(sp state.Provider, tp timers.Provider, _ string, n int64) error {
	fired, _, err := f.Fired.Read(sp)
	if err != nil {
		return err
	}
	if fired {
		f.lines.Add(fmt.Sprintf("late %d", n))
		return nil
	}
	f.End.Set(tp, mtime.EndOfGlobalWindowTime.Subtract(time.Hour).ToTime())
	f.lines.Add(fmt.Sprintf("elem %d", n))
	return nil
}

func (f *countLate) OnTimer(sp state.Provider, _ timers.Provider, _ string, _ timers.Context) error {
	f.lines.Add("fired")
	return f.Fired.Write(sp, true)
}

func (f *countLate) FinishBundle() error { return f.lines.Flush(f.Dir) }

func init() {
	register.DoFn2x2[beam.EventTime, []byte, string, int64](&index{})
	register.DoFn5x1[state.Provider, timers.Provider, string, int64, func(string, int64), error](&holdFirst{})
	register.DoFn4x1[state.Provider, timers.Provider, string, int64, error](&countLate{})
	register.Emitter2[string, int64]()
}

// metricsOnly matches the error of a job that ended DONE but whose metrics
// the Python job service could not report; a job that failed says "job ...
// failed" in the same error (as in testdata/unboundedjob).
var (
	metricsOnly = regexp.MustCompile(`maximum recursion depth exceeded`)
	jobFailed   = regexp.MustCompile(`job \S+ failed|failed to get job stream`)
)

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
	dir, err := os.MkdirTemp("", "watermarkjob-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The source starts 3 s from now, past the job's submission, so that
	// its elements come spread over bundles rather than in one burst.
	start := time.Now().Truncate(time.Second).Add(3 * time.Second)
	p, s := beam.NewPipelineWithRoot()
	impulses := periodic.Impulse(s, start, start.Add(time.Duration(*ticks)*(*interval)), *interval, false)
	keyed := beam.ParDo(s, &index{StartMs: start.UnixMilli(), IntervalMs: interval.Milliseconds()}, impulses)
	passed := beam.ParDo(s, &holdFirst{
		Held:    state.MakeBagState[int64]("held"),
		Seen:    state.MakeValueState[bool]("seen"),
		Flush:   timers.InProcessingTime("flush"),
		DelayMs: delay.Milliseconds(),
	}, keyed)
	if *shuffle {
		passed = beam.Reshuffle(s, passed)
	}
	beam.ParDo0(s, &countLate{
		Fired: state.MakeValueState[bool]("fired"),
		End:   timers.InEventTime("end"),
		Dir:   dir,
	}, passed)
	if err := beamx.Run(context.Background(), p); err != nil {
		if !metricsOnly.MatchString(err.Error()) || jobFailed.MatchString(err.Error()) {
			return fmt.Errorf("pipeline failed: %w", err)
		}
		log.Printf("the job ended, its metrics could not be read: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "bundle-*.txt"))
	if err != nil {
		return err
	}
	elements, late, fired := 0, 0, 0
	for _, name := range files {
		buf, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(buf)), "\n") {
			switch {
			case line == "fired":
				fired++
			case strings.HasPrefix(line, "late "):
				late++
				elements++
			case strings.HasPrefix(line, "elem "):
				elements++
			}
		}
	}
	fmt.Printf("stage2: elements=%d late=%d fired=%d\n", elements, late, fired)
	return nil
}

package async

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
)

// drainRun is streamFn's records of some keys, and the drain of one of
// them on a new escrowFn instance of the same worker.
type drainRun struct {
	h       *harness
	f       *streamFn
	records map[any][][]byte
	out     []string
	stamps  map[string]beam.EventTime
}

func newDrainRun(h *harness) *drainRun {
	return &drainRun{h: h, f: h.stream(), records: map[any][][]byte{}, stamps: map[string]beam.EventTime{}}
}

// process feeds one element of key to streamFn in a bundle of its own, at
// its own event time, and keeps the record it sends.
func (d *drainRun) process(key string, v int) {
	d.h.t.Helper()
	ctx := context.Background()
	escrow := func(_ beam.EventTime, k beam.X, raw []byte) { d.records[k] = append(d.records[k], raw) }
	d.f.StartBundle(ctx, nil, nil, nil)
	if err := d.f.ProcessElement(ctx, mtime.FromTime(d.h.clock.Now()), d.h.st(key), d.h.tm(key), key, v, d.h.emitter(key), d.h.fail, escrow); err != nil {
		d.h.t.Fatalf("ProcessElement(%s, %d): %v", key, v, err)
	}
	d.h.clock.Advance(time.Millisecond)
}

// drain is the end of input for key, with the stream's timers dropped:
// escrowFn takes the key's records, then its timer fires, in one bundle,
// which must end within ten seconds of real time (the harness's clock does
// not move). ready runs once OnTimer returned, before FinishBundle.
func (d *drainRun) drain(key string, ready func()) {
	d.h.t.Helper()
	e, st, tm := newEscrowFn(d.h.c), &memState{}, &memTimers{}
	emit := func(ts beam.EventTime, z beam.Z) {
		d.out = append(d.out, z.(string))
		d.stamps[z.(string)] = ts
	}
	fail := func(_ beam.EventTime, fr Failure) { d.h.t.Errorf("failure record %+v", fr) }
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			if err := e.StartBundle(ctx, emit, fail); err != nil {
				return err
			}
			for _, r := range d.records[key] {
				if err := e.ProcessElement(ctx, st, tm, key, r, emit, fail); err != nil {
					return err
				}
			}
			if _, set := tm.lastSet(); !set {
				d.h.t.Errorf("the drain timer of key %s was never set", key)
			}
			if err := e.OnTimer(ctx, st, tm, key, beamtimers.Context{Family: e.Drain.Family}, emit, fail); err != nil {
				return err
			}
			ready()
			return e.FinishBundle(ctx, emit, fail)
		}()
	}()
	select {
	case err := <-done:
		if err != nil {
			d.h.t.Fatalf("the drain of key %s: %v", key, err)
		}
	case <-time.After(10 * time.Second):
		// Closing the pool ends every call, and the drain's wait.
		if p, err := d.h.c.Pool(); err == nil {
			p.Close(ctx)
		}
		<-done
		d.h.t.Fatalf("the drain of key %s did not end: it waits for a place the stream's calls hold", key)
	}
}

// streamTaskOf is the pool's task of the stream for the pending element
// (key, v).
func (h *harness) streamTaskOf(key string, v int) *state.Task {
	h.t.Helper()
	envs := h.pendingOf(key, v)
	if len(envs) != 1 {
		h.t.Fatalf("element (%s, %d) is pending %d times; want once", key, v, len(envs))
	}
	p, _ := h.c.Pool()
	return p.Lookup(state.TaskKey{Owner: h.owner(key), Element: envs[0].Element(h.owner(key))})
}

// TestDrainAdoptsFinishedCalls: at the end of input a key holds an element
// whose stream call finished with success on this worker, and one whose
// call still runs. The drain commits the first from that call, without
// calling again, at its element's event time; it removes the running call
// (interrupted) and runs its element again. With WithOrdered the outputs
// keep the key's order, the adopted one waiting for the one run again.
func TestDrainAdoptsFinishedCalls(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(map[bool]string{false: "unordered", true: "ordered"}[ordered], func(t *testing.T) {
			opts := []Option{WithEndOfInputDrain(), WithParallelism(4), WithMaxItemsToBuffer(4), WithMaxItemsHeld(4)}
			if ordered {
				opts = append(opts, WithOrdered())
			}
			name := runName(t)
			h := newHarness(t, &gated{Name: name}, stringKey, opts...)
			d := newDrainRun(h)
			d.process("a", 1) // runs until the drain's end
			d.process("a", 2) // finishes
			book.open(gateID(name, "a", 2))
			h.waitFinished("a", 2)
			h.waitRunning("a", 1)
			running, finished := h.streamTaskOf("a", 1), h.streamTaskOf("a", 2)
			stamp2 := beam.EventTime(h.pendingOf("a", 2)[0].EventTimeMs)
			d.drain("a", func() {
				select {
				case <-running.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("the running stream call was not stopped")
				}
				book.open(gateID(name, "a", 1))
			})
			want := []string{"a:1#0", "a:2#0"}
			got := slices.Clone(d.out)
			if !ordered {
				sort.Strings(got)
			}
			if !slices.Equal(got, want) {
				t.Errorf("drained outputs %v; want %v", d.out, want)
			}
			if n := book.count(gateID(name, "a", 2)); n != 1 {
				t.Errorf("the finished element was called %d times; want once (adopted)", n)
			}
			if n := book.count(gateID(name, "a", 1)); n != 2 {
				t.Errorf("the running element was called %d times; want twice (its stream call stopped, run again)", n)
			}
			if !running.Interrupted() {
				t.Error("the running stream call was not interrupted")
			}
			p, _ := h.c.Pool()
			if p.Lookup(running.Key) != nil || p.Lookup(finished.Key) != nil {
				t.Error("a stream call of the drained key is still in the pool")
			}
			if got := d.stamps["a:2#0"]; got != stamp2 {
				t.Errorf("the adopted output's timestamp %v; want its element's %v", got, stamp2)
			}
		})
	}
}

// TestDrainReclaimsPlaces: the only place is held by a stream call of
// another key, which the runner will never commit (its timers are gone),
// and the drained element needs it: the drain takes it at once, not after
// the stale period (the harness's clock never moves). A call still
// running goes; a finished result goes too when the drain has nothing of
// its own that would free a place.
func TestDrainReclaimsPlaces(t *testing.T) {
	for _, other := range []string{"running", "finished"} {
		t.Run(other, func(t *testing.T) {
			name := runName(t)
			h := newHarness(t, &gated{Name: name}, stringKey, WithEndOfInputDrain(), WithParallelism(1),
				WithMaxItemsToBuffer(1), WithMaxItemsHeld(1))
			d := newDrainRun(h)
			d.process("b", 1)
			if other == "finished" {
				book.open(gateID(name, "b", 1))
				h.waitFinished("b", 1)
			} else {
				h.waitRunning("b", 1)
			}
			held := h.streamTaskOf("b", 1)
			d.process("a", 2) // no room: queued, and escrowed
			if n := len(h.st("a").queued()); n != 1 {
				t.Fatalf("key a queued %d elements; want its one", n)
			}
			book.open(gateID(name, "a", 2))
			d.drain("a", func() {})
			if !slices.Equal(d.out, []string{"a:2#0"}) {
				t.Errorf("drained outputs %v; want [a:2#0]", d.out)
			}
			if p, _ := h.c.Pool(); p.Lookup(held.Key) != nil {
				t.Errorf("the %s stream call of key b still holds its place", other)
			}
		})
	}
}

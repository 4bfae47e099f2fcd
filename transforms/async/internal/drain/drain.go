package drain

// The drain itself: when escrowFn's timer fires, and how it runs what a
// key still holds. An element whose call the stream path finished on this
// worker is committed without calling again; the others run as the bounded
// path runs them (bounded.Path), and the stream's calls that will never be
// committed give up their places to them.

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/bounded"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// OnTimer is the end of input: the key's escrowed elements were never
// committed by streamFn, and never will be. Each is committed here, in its
// key's acceptance order: from its stream call if that finished on this
// worker with success, else by a call of this bundle; FinishBundle emits
// what is left in this bundle, which also writes the key's state.
func (f *Path) OnTimer(ctx context.Context, sp beamstate.Provider, tp beamtimers.Provider, key any, timer beamtimers.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure)) error {
	if timer.Family != f.timer.Family {
		return fmt.Errorf("async: timer of unknown family %q", timer.Family)
	}
	b, err := f.Read(sp)
	if err != nil {
		return err
	}
	sum, found, err := f.readSummary(sp)
	if err != nil {
		return err
	}
	sum.Timer = HoldNone // it fired
	// The drained elements stay named in the log, which the runner
	// collects with the window, and so do the early releases. Where the
	// runner honours the watermark every record has arrived before this
	// timer fires; one that fires it early (Beam Python's job service) can
	// bring records after it: an escrow or release of a drained element
	// then fails the job (ErrDrainedTwice), and an escrow of a released
	// one is cancelled, not drained again.
	if b.Entries > 0 {
		if err := f.log.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
	}
	if len(b.Held) > 0 || b.DrainedRaw != nil {
		ids := make([]ID, 0, len(b.Held)+len(b.Drained))
		for id := range b.Drained {
			ids = append(ids, id)
		}
		for _, env := range b.Held {
			ids = append(ids, IDOf(env))
		}
		SortIDs(ids)
		if err := f.log.Add(sp, IDsEntry(EntryDrained, ids)); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
		sum.Drained = true
	}
	early := b.EarlyIDs()
	if len(early) > 0 {
		if err := f.log.Add(sp, IDsEntry(EntryRelease, early)); err != nil {
			return fmt.Errorf("async: adding to bag state: %w", err)
		}
	}
	sum.Held, sum.Early, sum.Escrowed, sum.Released = 0, int64(len(early)), 0, 0
	switch {
	case sum.Drained || len(early) > 0:
		if err := f.writeSummary(sp, sum); err != nil {
			return err
		}
	case found:
		if err := f.summary.Clear(sp); err != nil {
			return fmt.Errorf("async: clearing bag state: %w", err)
		}
	}
	return f.drain(ctx, key, b.Held, emit, fail)
}

// drain commits held, the elements of key that the stream never committed.
// At the end of input (on such a runner) every record has arrived, so they
// are of the key's last incarnation, whose order is its seq. An element
// whose stream call (its task: owner the key, as internal/stream looks it up)
// finished on this worker with success is adopted; a stream call still
// running, or failed, is removed, and the element runs in this bundle. So
// does one this worker never ran. This bundle's elements then take the
// places of stream calls that will never be committed (bounded.Path's
// reclaim).
func (f *Path) drain(ctx context.Context, key any, held []state.Envelope, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, terms.Failure)) error {
	if len(held) == 0 {
		return nil
	}
	sort.Slice(held, func(i, j int) bool {
		if held[i].Nonce != held[j].Nonce {
			return held[i].Nonce < held[j].Nonce
		}
		return held[i].Seq < held[j].Seq
	})
	kb, err := f.EncodeKey(key)
	if err != nil {
		return fmt.Errorf("async: encoding key %v: %w", key, err)
	}
	run := f.bundle
	owner, pool := string(kb), run.EndOfInput()
	for _, env := range held {
		value, err := f.drainedValue(key, env)
		if err != nil {
			return err
		}
		f.Metrics().Drained.Inc(ctx, 1)
		ts := beam.EventTime(env.EventTimeMs)
		if t := pool.Lookup(state.TaskKey{Owner: owner, Element: env.Element(owner)}); t != nil {
			if bounded.Succeeded(t) {
				if err := run.Adopt(ctx, ts, key, value, env.Attempts, t); err != nil {
					return err
				}
				continue
			}
			pool.Remove(t)
			f.Metrics().Cancelled.Inc(ctx, 1)
			f.Event(terms.EventCancelled, key, env.ID, t.Attempts(), nil)
		}
		if err := f.bundle.ProcessElement(ctx, ts, key, value, emit, fail); err != nil {
			return err
		}
	}
	return nil
}

// drainedValue is the input value of an escrowed element, as bundleFn
// takes it: with its window when the input carries windows.
func (f *Path) drainedValue(key any, env state.Envelope) (any, error) {
	if f.Carried {
		return worker.Carry.Wrap(env.Window, env.Value), nil
	}
	return f.DecodeValue(key, env.Value)
}

package async

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/drain"
)

// BenchmarkDrainRecord measures the end-of-input drain's cost per element
// (WithEndOfInputDrain) on one hot key with a backlog of pending elements:
// an op is a bundle of streamFn that accepts one element of the key (no
// place is free, so it queues: streamFn's cost here does not grow with
// the backlog), and, with the drain on, escrowFn applying the record that
// callback sent and the record of a commit of the key's oldest escrowed
// element. That commit's own callback is not run (it would read the
// key's queue, which costs streamFn the backlog with or without the
// drain); its record is made as package stream makes one, so escrowFn holds
// the backlog throughout. drain=on less drain=off is the drain's cost per
// element.
func BenchmarkDrainRecord(b *testing.B) {
	for _, backlog := range []int{10, 1_000, 10_000} {
		for _, withDrain := range []bool{false, true} {
			b.Run(fmt.Sprintf("backlog=%d/drain=%s", backlog, map[bool]string{false: "off", true: "on"}[withDrain]), func(b *testing.B) {
				benchDrainRecord(b, backlog, withDrain)
			})
		}
	}
}

func benchDrainRecord(b *testing.B, backlog int, withDrain bool) {
	name := runName(b)
	opts := []Option{WithParallelism(1), WithMaxItemsToBuffer(1), WithMaxItemsHeld(1)}
	if withDrain {
		opts = append(opts, WithEndOfInputDrain())
	}
	h := newHarness(b, &gated{Name: name}, stringKey, opts...)
	f, ctx := h.stream(), context.Background()
	e, est, etm := newEscrowFn(h.c), &memState{}, &memTimers{}
	var first drain.Record // the key's first record, which names its incarnation
	apply := func(raw []byte) {
		if err := e.ProcessElement(ctx, est, etm, "a", raw, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	escrow := func(_ beam.EventTime, _ beam.X, raw []byte) {
		if first.Body == nil {
			first, _ = drain.DecodeRecord(raw)
		}
		apply(raw)
	}
	process := func(v int) {
		f.StartBundle(ctx, nil, nil, nil)
		if err := f.ProcessElement(ctx, mtime.FromTime(h.clock.Now()), h.st("a"), h.tm("a"), "a", v, h.emitter("a"), h.fail, escrow); err != nil {
			b.Fatal(err)
		}
	}
	for v := 0; v < backlog; v++ { // the first takes the only place and runs until the end; the others queue
		process(v)
	}
	var nonce uint64
	var hold mtime.Time
	if withDrain {
		b0 := drain.NewBook()
		if err := b0.ApplyBody(first.Body); err != nil || len(b0.Held) != 1 {
			b.Fatalf("the key's first record: %v", err)
		}
		nonce, hold = b0.Held[0].Nonce, first.Hold
	}
	b.ReportAllocs()
	for n := int64(1); b.Loop(); n++ {
		process(backlog + int(n))
		if withDrain { // the commit of the n-th element accepted
			apply(drain.EncodeRecord(drain.NextOrdinal(), hold, nil, []drain.ID{{Nonce: nonce, Seq: n}}))
		}
	}
	b.StopTimer()
	book.open(gateID(name, "a", 0))
}

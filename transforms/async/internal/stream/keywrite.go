package stream

import (
	"fmt"

	"github.com/asyncbeam/asyncbeam/state"
)

// A key's state written back at the end of its callback: its bag of
// pending elements and its queue.

// write applies the bundle's changes to the key's bags with at most one
// add to each, since every add is a round trip to the runner (two: Beam Go
// sends an entry's length prefix on its own): a changed bag (one that holds
// elements the view no longer does, or superseded summaries that outnumber
// its elements) is cleared and rewritten as one entry that also holds the
// queue summary; otherwise the new elements are added as one entry, with
// the queue summary if it changed.
func (v *keyView) write(ks keyState) error {
	if err := v.writePending(ks); err != nil {
		return err
	}
	return v.writeQueue(ks)
}

func (v *keyView) writePending(ks keyState) error {
	if v.summaryChanged && v.summaries >= max(8, len(v.entries)) {
		v.changed = true // superseded summaries outnumber the elements: compact
	}
	if !v.changed {
		if len(v.added) == 0 && !v.summaryChanged {
			return nil
		}
		// A summary of zero says the queue emptied.
		return v.addPending(ks, v.added, v.summaryChanged)
	}
	v.changed = false
	if err := ks.bag.Clear(ks.sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	v.summaries = 0
	if len(v.entries) == 0 && v.queue.Count == 0 {
		v.added, v.summaryChanged = nil, false
		return nil
	}
	// The summary also goes with an empty queue: it keeps the highest
	// sequence number given, which the rewrite may have dropped with its
	// element.
	return v.addPending(ks, raws(v.entries), true)
}

// addPending appends encoded elements to the pending bag as one entry,
// with the queue summary when summary is set.
func (v *keyView) addPending(ks keyState, encoded [][]byte, summary bool) error {
	v.added = nil
	var entry []byte
	switch {
	case !summary:
		entry = state.EncodeElements(encoded)
	case len(encoded) == 0:
		entry = v.nextSummary().Encode()
	default:
		entry = state.EncodeWithSummary(encoded, v.nextSummary())
	}
	if err := ks.bag.Add(ks.sp, entry); err != nil {
		return fmt.Errorf("async: adding to bag state: %w", err)
	}
	return nil
}

// nextSummary is the queue summary to write now: the next serial number,
// with what the key's elements share.
func (v *keyView) nextSummary() state.QueueSummary {
	v.summaryChanged = false
	v.summaries++
	v.queue.Serial++
	v.queue.Nonce, v.queue.HighSeq = v.nonce, max(v.maxSeq, v.queue.MaxSeq)
	return v.queue
}

func (v *keyView) writeQueue(ks keyState) error {
	if !v.queueChanged {
		if len(v.toQueue) > 0 {
			if err := ks.queue.Add(ks.sp, state.EncodeElements(raws(v.toQueue))); err != nil {
				return fmt.Errorf("async: adding to bag state: %w", err)
			}
		}
		v.toQueue = nil
		return nil
	}
	v.queueChanged, v.toQueue = false, nil
	if err := ks.queue.Clear(ks.sp); err != nil {
		return fmt.Errorf("async: clearing bag state: %w", err)
	}
	if len(v.queued) == 0 {
		return nil
	}
	if err := ks.queue.Add(ks.sp, state.EncodeElements(raws(v.queued))); err != nil {
		return fmt.Errorf("async: rewriting bag state: %w", err)
	}
	return nil
}

func raws(ps []*pending) [][]byte {
	out := make([][]byte, len(ps))
	for i, p := range ps {
		out[i] = p.raw
	}
	return out
}

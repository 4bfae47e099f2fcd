package async

import (
	"fmt"
	"sort"

	"github.com/asyncbeam/asyncbeam/state"
)

// WithOrdered commits the results of each key in the order its elements were
// accepted (Flink's ordered mode, Parallel Consumer's KEY ordering): a
// finished element waits until every earlier element of its key has been
// committed or has failed for good. Calls still run in parallel; only their
// commits wait. The order survives worker restarts and moved keys: each
// element's place is kept with it in bag state.
//
// The cost is latency and memory: one slow or retrying element holds back
// its key's later results (a failed attempt waiting for its backoff holds
// them for that long), and the held results keep their places (see
// WithMaxItemsHeld). So that a key can never be stuck behind a full worker,
// its earliest pending element is started even without a place (one extra
// element per key; two for a moment after a callback of the key failed and
// was retried). Failure records are not held back: they go to the failure output
// as soon as an element fails for good.
//
// With bounded input the drain emits each key's results in order, holding
// at most WithMaxItemsToBuffer of them. Default: unordered.
func WithOrdered() Option {
	return func(s *settings) { s.ordered = true }
}

// nextSeq numbers one accepted element of the key: 1, 2, ... in the order
// ProcessElement saw them. The first element of a key in a bundle reads the
// key's bag for the highest number it holds; later ones count on in memory.
// A key whose bag has emptied starts again at 1, which keeps the order,
// since nothing of it is pending. (A value state holding the count would be
// state that outlives the key's pending elements.)
func (f *core) nextSeq(kb []byte, ks keyState) (int64, error) {
	if f.lastSeq == nil {
		f.lastSeq = map[string]int64{}
	}
	last, ok := f.lastSeq[string(kb)]
	if !ok {
		raws, _, err := ks.bag.Read(ks.sp)
		if err != nil {
			return 0, fmt.Errorf("async: reading bag state: %w", err)
		}
		for _, raw := range raws {
			env, err := state.DecodeEnvelope(raw)
			if err != nil {
				return 0, fmt.Errorf("async: bag state %q holds an entry this version cannot read: %w", pendingStateID, err)
			}
			last = max(last, env.Seq)
		}
	}
	f.lastSeq[string(kb)] = last + 1
	return last + 1, nil
}

// sortBySeq puts entries in acceptance order; entries without a number (from
// a version that did not keep it) keep their bag order, first.
func sortBySeq(entries []pending) {
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].env.Seq < entries[j].env.Seq })
}

package async

import (
	"fmt"
	"sort"

	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
)

// seqStateID names the value state that numbers a key's accepted elements
// when the transform keeps order.
const seqStateID = "asyncSeq"

// WithOrdered commits the results of each key in the order its elements were
// accepted (Flink's ordered mode, Parallel Consumer's KEY ordering): a
// finished element waits until every earlier element of its key has been
// committed or has failed for good. Calls still run in parallel; only their
// commits wait. The order survives worker restarts and moved keys: each
// element's place is kept with it in bag state.
//
// The cost is latency and memory: one slow or retrying element holds back
// its key's later results (a failed attempt waiting for its backoff holds
// them for that long), and the held results keep their buffer places. So
// that a key can never be stuck behind a full buffer, its earliest pending
// element is started even without a buffer place (at most one extra element
// per key). Failure records are not held back: they go to the failure output
// as soon as an element fails for good.
//
// With bounded input the drain emits each key's results in order, holding
// at most WithMaxItemsToBuffer of them. Default: unordered.
func WithOrdered() Option {
	return func(s *settings) { s.ordered = true }
}

// nextSeq numbers one accepted element of the key: 1, 2, ... in the order
// ProcessElement saw them. The count lives in value state next to the bag
// and is cleared when the bag empties.
func nextSeq(seq *beamstate.Value[int64], sp beamstate.Provider) (int64, error) {
	last, _, err := seq.Read(sp)
	if err != nil {
		return 0, fmt.Errorf("async: reading the key's sequence number: %w", err)
	}
	if err := seq.Write(sp, last+1); err != nil {
		return 0, fmt.Errorf("async: writing the key's sequence number: %w", err)
	}
	return last + 1, nil
}

// sortBySeq puts entries in acceptance order; entries without a number (from
// a version that did not keep it) keep their bag order, first.
func sortBySeq(entries []pending) {
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].env.Seq < entries[j].env.Seq })
}

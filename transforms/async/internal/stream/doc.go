// Package stream is the unbounded path of transforms/async: the callbacks
// of its stateful DoFn over keyed input (streamFn in the front, which owns
// the two bags and the timer the job graph names).
//
// Every accepted element waits in its key's bag state until a callback of
// the key commits it: it emits the outputs of the finished call and removes
// the element from the bag in the same bundle, which the runner commits
// whole, so each output is committed exactly once. A key's callbacks are
// its processing-time timer, set where timers.Cadence.Plan says, and its
// first ProcessElement in each bundle.
//
// One element, from ProcessElement to its commit, reads in this order:
//   - stream.go: the DoFn's callbacks and the bundle's start and end.
//   - commit.go: commitOnce, the commit of the key's finished elements, and
//     the start of what it may start.
//   - turn.go: keyTurn, one key in one callback: open, accept, store, plan.
//   - keyread.go: the key's bags read at the bundle's first touch.
//   - keywrite.go: the bags written back, with one add each at most.
//   - keyview.go: Path and keyView, what the bundle knows of the key.
//
// The calls themselves run on the transform's pool (state.Pool) through
// worker.Core.
package stream

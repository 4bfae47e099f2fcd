// Package state holds the async transform's worker-local, in-flight state and
// the format of what it keeps in Beam bag state: of the design's "keeps every
// accepted element in bag state, hands it to a bounded goroutine pool shared
// by all instances of that transform in the worker process", the pool and the
// bytes in the bag.
//
// It is Beam-free, and unrelated to Beam's core/state, which declares the
// state cells a DoFn reads and writes through the runner: this package is
// what a worker keeps in memory beside them, and the bytes it puts in them.
//
// Beam bag state is the durable record of every accepted element; this
// package is the fast, volatile one that sits beside it in each worker
// process:
//
//   - [Pool]: one per async transform per process, shared by all DoFn
//     instances of that transform. It admits tasks up to Hold places (every
//     task it holds: waiting, in flight, or finished and waiting for its
//     key's commit), lets at most Buffer of them be in flight, runs at most
//     Parallelism at once, and hands places and slots out by priority, then
//     arrival. It indexes [Task] records by [TaskKey] (an owner, a key or a
//     bundle, and the task's [ElementID]) so that an element is never run twice
//     at once in a worker and a key's commit finds its work; it remembers
//     when each owner was last called back, so that the work of owners gone
//     from the worker (keys that moved, bundles of dropped DoFn instances) is
//     evicted ([Pool.EvictIdle]), sparing an owner that came back after an
//     eviction, and a busy key is told from a quiet one. While owners wait
//     for a place ([Pool.Waiting]), a place that frees is kept for them in
//     turn, first come, first served.
//   - [Registry] ([Default], [Shared], [Reset]): the only process-global state
//     of the project, a map from the transform's UUID (fixed at pipeline
//     construction and shipped with the DoFn) to its Pool and to the object
//     shared beside it ([Registry.SharedValue]: the transform's listeners,
//     cache and counts).
//   - [ElementID]: the one name of an element (key, window, ID, and where
//     its key's state accepted it), in bag state, in the Pool and in its
//     retry's jitter.
//   - [Envelope]: how one element is written into bag state: its identity, its
//     event time, its place in its key's order, its retry state and its value
//     encoded with the input's value coder. A bag entry ([DecodeEntry])
//     holds one envelope, a batch of them ([EncodeBatch]), a [QueueSummary]
//     (which describes the key's elements queued in a second bag for want of
//     room), or envelopes with a summary ([EncodeWithSummary]), so that a
//     callback adds at most one entry to each bag (after a clear when it
//     rewrites the bag), whatever the number of elements: in Beam Go v2.77
//     each add is two requests to the runner, and a clear one.
//
// Nothing here survives a worker restart, and nothing needs to: an element in
// bag state that no Pool knows is simply started again.
package state

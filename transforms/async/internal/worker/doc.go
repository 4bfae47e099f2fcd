// Package worker runs one element's call, for every path of the transform:
// Core is what each DoFn embeds (the shipped terms.Config and what its
// instance builds in Setup), and its methods take an element from prepare
// (encode, identify, priority) through submit to the pool, the wrapped
// fn's call with its timeout, retries, cache, batch and join, to its
// outputs or its failure record. Once per transform in a worker process,
// under the transform's ID in the state registry, live the pool, its gate
// (the guard), the listeners' hub, the result cache and the counts the
// DoFns publish (worker.go).
//
// The paths are packages above this one: internal/stream (unbounded
// input), internal/bounded (bounded input) and internal/drain (the
// unbounded path's end-of-input drain). The front keeps only the DoFn
// types Beam names: a DoFn's package and type name its step in the job
// graph.
//
// The files stand in layers, and a file refers only to files below it,
// from the bottom:
//   - element.go, tickets.go, hub.go, counts.go, resultcache.go: plain
//     types (an element, a bundle's tickets, the listeners' hub, the
//     per-process counts, the result cache).
//   - worker.go: the per-process object that holds them; core.go: Core.
//   - instance.go, codec.go, priority.go, progress.go, enrich.go,
//     cachetypes.go: Core's accessors and small helpers.
//   - workerparts.go: the way to the per-process object and its parts;
//     events.go: an event, counted and sent to the listeners.
//   - gate.go, attempt.go, retry.go, failure.go, batch.go, cachedjob.go:
//     the gate, one attempt's call, retries, failures, batches, and the
//     cache around a job.
//   - call.go, publish.go, pool.go, lifecycle.go: what the paths call.
package worker

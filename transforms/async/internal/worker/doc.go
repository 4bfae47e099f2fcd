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
// The paths (stream, bundle, drain) and the DoFn types Beam names stay in
// the front, above this package: a DoFn's package and type name its step
// in the job graph.
package worker

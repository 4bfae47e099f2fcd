// Package async runs a slow, synchronous Beam DoFn (a call to a web service,
// a model, a database) asynchronously over keyed input, with every output
// committed exactly once. It replaces a beam.ParDo:
//
//	out := async.ParDo(s, &myDoFn{...}, keyed, async.WithParallelism(64))
//
// keyed is a PCollection<KV<K, V>>; myDoFn is the DoFn you already have, in
// any shape beam.ParDo takes over KV input; out is PCollection<O>, or
// PCollection<KV<K2, V2>> for a fn that outputs pairs. Each output has the
// event time and the window of its element.
//
// ParDoWithFailures also returns the elements that failed for good as
// Failure records. BatchParDo calls a fn with many elements at once; Enrich
// and BatchEnrich join each record with a lookup by its key. Each has a Try
// form that returns construction errors instead of panicking. Options
// (With...) set the calls at once, retries, timeouts, ordering, priority,
// rate limits, adaptive parallelism, a cache, batch sizes, listeners and the
// end-of-input drain.
//
// Calls run on a pool of goroutines shared by all instances of the
// transform in a worker process. On unbounded input each accepted element
// waits in bag state under its key until a callback of the key emits its
// outputs and removes it in the same bundle. On bounded input the bundle
// that took an element emits its outputs. DESIGN.md, beside this package,
// walks through the code and defines its words.
//
// # Guarantees
//
//   - Each element's outputs are committed once, on runners that commit a
//     bundle's state and outputs together and retry a failed bundle whole.
//   - Outputs keep their element's event time and window (global, fixed,
//     sliding, session); on unbounded input the watermark is held at the
//     earliest pending element.
//   - Calls are made at least once: side effects must be idempotent.
//   - Nothing is dropped silently: an element that fails for good is a
//     Failure record, or fails its key's commit or its bundle with the cause.
//   - A worker holds at most WithMaxItemsHeld elements per transform; the
//     rest wait in bag state or in ProcessElement.
//   - Every pending element is committed when unbounded input ends: by the
//     timers on prism and Dataflow, by the end-of-input drain on Flink (on
//     by default for --runner=flink).
//   - A fn's Revert runs for committed failures only.
//
// README's Runners section says which of these were run on each runner and
// which were read in its sources.
//
// # The wrapped fn
//
// fn is a pointer to a registered DoFn struct or a top-level function. Its
// ProcessElement, StartBundle and FinishBundle run concurrently for
// different elements and must be safe for that. The context it gets ends
// when its element's work is cancelled. Keep what Setup opens shared and
// bounded: Beam Go drops the instance of a failed bundle without Teardown.
//
// # Watching it
//
// WithListener sends each element's events to a Listener (LogListener,
// JSONLinesListener and TimingListener are ready ones); Beam metrics in the
// transform's scope count the same events (see MetricAccepted).
//
// # Limits
//
//   - Keys must encode deterministically (integers, strings, bools, []byte,
//     and arrays, slices and structs of those).
//   - A merged session window, or an element moved out of its window, is a
//     failure record of kind KindWindow.
//   - In sliding windows the fn is called once per window.
//   - On prism a busy key's last results wait for a backstop timer when its
//     input stops: 0.5 to 3 s at the default callback frequency, up to about
//     15 s while bundles are long. A worker's first elements wait at least
//     1 s unless a later element of their key commits them.
//   - A hot key's callback reads its whole backlog: keep backlogs bounded.
//   - Prism (v2.78.0) loses the bag state of a stateful DoFn when it splits
//     a running bundle, so the transform turns prism's splits off when it
//     is built (runner/nosplit): parse flags before building the pipeline,
//     and do not set --experiments again after it.
//   - Updating a running unbounded pipeline to a version that reads its
//     state differently needs a drain first (DESIGN.md, "State across
//     versions").
package async

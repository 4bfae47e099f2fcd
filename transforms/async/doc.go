// Package async runs a slow, synchronous Beam DoFn (a call to a web service,
// a model, a database) asynchronously over keyed input, with every output
// committed exactly once.
//
//	out := async.ParDo(s, &myDoFn{...}, keyed, async.WithParallelism(64))
//
// keyed is a PCollection<KV<K, V>>; myDoFn is the DoFn you already have, with
// ProcessElement([ctx,] K, V, emit func(O)) [error]; out is PCollection<O>.
//
// # How it works
//
// Every accepted element is added to Beam bag state under its key, the
// durable record of work in flight, and started on a pool of goroutines shared
// by all instances of the transform in the worker process (at most
// WithParallelism calls at once). Outputs are not emitted by ProcessElement.
// A timer callback of the key emits the outputs of the finished elements and
// removes exactly those from bag state in the same callback, so the runner
// commits both or neither. An element in bag state that the worker does not
// know (after a restart, or a key that moved) is started again; local work for
// an element no longer in bag state is cancelled through its context.
//
// Which timer commits depends on the input:
//   - unbounded input: a processing-time timer on round increments of
//     WithCallbackFrequency, shifted per key by a hash of the key; while work
//     remains it re-arms after the observed call latency rather than a whole
//     round, so queued elements start as slots free;
//   - bounded input: an event-time timer at the end of the window, which fires
//     once the input is exhausted and drains the key: it starts what is left,
//     waits, and emits each result as it finishes. This is the path runners
//     that never fire processing-time timers in batch (Dataflow) deliver.
//
// Each DoFn declares a single timer family: Beam Go v2.77.0 hangs a bundle on
// prism when a DoFn declares two.
//
// # Guarantees
//
//   - Outputs are committed exactly once per element, provided the runner
//     commits a callback's state changes and outputs atomically (all Beam
//     runners do).
//   - Calls are made at least once: a worker restart, a failed bundle or a
//     moved key runs an element again, so side effects must be idempotent.
//   - Identity is (key, ID). The ID is the SHA-256 of the encoded value, or
//     what WithIDFn returns. Copies of one element that are pending at the
//     same time are one element: one call, one output. A copy that arrives
//     after the first was committed is a new element.
//   - A failed attempt (an error, a panic, or a timeout from WithCallTimeout)
//     is retried up to WithMaxAttempts after WithBackoff, unless WithRetryIf
//     says no or the fn returned Permanent(err). With unbounded input the
//     retry waits in bag state, with its attempt count and due time, holding
//     no pool slot; with bounded input it waits in the worker on a timer (the
//     drain commits the key in one step, at its end).
//   - An element that fails for good is written to the failure output of
//     ParDoWithFailures exactly once, removed from bag state in the same
//     callback, after the fn's Revert method (if any) ran; without a failure
//     output it fails its key's commit with the cause (a panic with its
//     stack), and its local record is dropped so that the retried callback
//     runs it again. Nothing is dropped silently.
//
// # The wrapped fn
//
// fn is a pointer to a DoFn struct registered in init() (for example with
// register.DoFn4x1), or a top-level function of the same shape. Its Setup and
// Teardown are called once per DoFn instance of the transform (Teardown after
// the instance's last call returns); StartBundle, ProcessElement and
// FinishBundle are called in sequence for every element, and concurrently for
// different elements on one instance: they must be safe for concurrent use.
// Outputs of FinishBundle belong to that element. The context passed to fn is
// cancelled when its element's work is cancelled. A fn that ignores its context
// keeps its pool slot until it returns.
//
// # Memory
//
// One worker process holds, per transform, at most WithMaxItemsToBuffer
// elements (waiting for a slot, running, or finished awaiting commit) plus,
// for each key being drained at that moment, at most the same number again.
// Elements beyond that stay in bag state only, which the runner keeps.
//
// # Limits
//
//   - Input must be KV with a deterministically encoded key.
//   - For unbounded input in non-global windows, an element must be committed
//     before its window expires, or the runner drops its state: keep the
//     callback frequency well inside the allowed lateness.
//   - With bounded input, keys are drained one after another within a bundle,
//     and finished results of keys not yet drained hold buffer places: with
//     many keys and a buffer smaller than the bundle's input, the pool idles.
//     Raise WithMaxItemsToBuffer towards the input size when memory allows.
package async

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
//     WithCallbackFrequency, shifted per key by a hash of the key onto one of
//     a few instants of the period (keys of one instant are delivered in one
//     bundle, which is what keeps the callbacks cheap); while elements of the
//     key wait in bag state for room it re-arms after the observed call
//     latency rather than a whole round, so they start as room frees;
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
// # Memory and buffers
//
// One worker process holds, per transform, at most WithMaxItemsHeld elements
// (default 64 x parallelism): admitted and waiting, running, or finished and
// awaiting their key's commit. Of those, at most WithMaxItemsToBuffer (default
// 2 x parallelism, as in Beam Python's AsyncWrapper) are in flight, handed to
// the slots; the others wait in the worker, by priority, for a place. For
// each key being drained at that moment the worker holds at most
// WithMaxItemsToBuffer more (WithMaxItemsHeld more with WithOrdered), and
// with WithOrdered on unbounded input one more per key (its earliest
// element, started so the key cannot be stuck; two for a moment after a
// failed callback of the key). Elements beyond that stay in
// bag state only, which the runner keeps, and are started by their key's
// callbacks.
//
// # Order, priority, events
//
// WithOrdered commits each key's results in the order its elements were
// accepted; WithPriority starts waiting elements by a priority computed from
// their value; WithListener sends every element's transitions (accepted,
// started, succeeded, retrying, failed, committed, cancelled, rescheduled,
// deduplicated, progress) to a Listener on the worker: LogListener,
// JSONLinesListener and TimingListener are ready ones. The wrapped fn can
// report its progress with ReportProgress. Events describe this worker's
// view: a callback that the runner retries reports its events again.
//
// # Limits
//
//   - Input must be KV with a deterministically encoded key.
//   - For unbounded input in non-global windows, an element must be committed
//     before its window expires, or the runner drops its state: keep the
//     callback frequency well inside the allowed lateness.
//   - With bounded input, keys are drained one after another within a bundle,
//     and finished results of keys not yet drained hold their places: with
//     many keys and a bundle's input larger than WithMaxItemsHeld, the pool
//     idles between drains. Raise WithMaxItemsHeld towards the input size
//     when memory allows.
//   - Prism (v2.77.0) splits slow stateful bundles in a way that can run two
//     bundles of one key at once and drop bag state writes; run it with
//     --experiments=prism_disable_sdf_split (runner.Run adds it).
package async

// Package async runs a slow, synchronous Beam DoFn (a call to a web service,
// a model, a database) asynchronously over keyed input, with every output
// committed exactly once. It replaces a beam.ParDo:
//
//	out := async.ParDo(s, &myDoFn{...}, keyed, async.WithParallelism(64))
//
// keyed is a PCollection<KV<K, V>>; myDoFn is the DoFn you already have, in
// any shape beam.ParDo takes over KV input (see TryParDo); out is
// PCollection<O>, or PCollection<KV<K2, V2>> for a fn that outputs pairs.
// Each output carries the event time and the window of the element it came
// from, as a plain beam.ParDo's would.
//
// # The transforms
//
//   - ParDo and ParDoWithFailures: one call per element; the second also
//     returns the elements that failed for good as Failure records
//     (DecodeFailure reads their key and value).
//   - BatchParDo: a fn whose ProcessBatch takes many elements per call (a
//     bulk endpoint, a model server); each element keeps its own commit,
//     retries and failure record.
//   - Enrich and BatchEnrich: look something up by each record's key, one
//     lookup per key, with a cache, and join the answer into each record
//     (Beam Python's Enrichment).
//
// For example, joining each order with its customer's profile:
//
//	out := async.Enrich(s, &customerLookup{...}, ordersByCustomer, joinOrder)
//
// Each has a Try form that returns construction errors instead of
// panicking. Options (With...) set the calls at once, retries, timeouts,
// ordering, priority, rate limits, adaptive parallelism, a cache, batch
// sizes, listeners and the end-of-input drain; README's Options table has
// them in one place.
//
// # How it commits
//
// Calls run on a pool of goroutines shared by all instances of the
// transform in a worker process, at most WithParallelism at once. On
// unbounded input every accepted element is kept in bag state under its
// key, and a processing-time timer of the key (or the key's next element)
// emits the finished results and removes them from bag state in the same
// bundle. On bounded input the bundle is the unit of commit: an element's
// outputs are emitted in the bundle that took it, and FinishBundle waits
// for its calls. DESIGN.md, next to this package, walks through the code.
//
// # Guarantees
//
//   - Outputs are committed exactly once per element, provided the runner
//     commits a bundle's state changes and outputs atomically and retries a
//     failed bundle whole (all Beam runners do).
//   - Each output has its element's event time and window, in the global,
//     fixed, sliding and session windows. On unbounded input the commit
//     timer holds the watermark at the earliest pending element, so
//     on-time elements give on-time outputs. Panes are not kept (Beam Go
//     cannot set them).
//   - Calls are made at least once: a failed bundle, a restart or a moved
//     key runs an element again, so side effects must be idempotent.
//   - Nothing is dropped silently: an element that fails for good (after
//     WithMaxAttempts, or Permanent) is a Failure record of
//     ParDoWithFailures, once, in its window; without a failure output it
//     fails its key's commit or its bundle with the cause (a panic with its
//     stack).
//   - Memory is bounded: a worker holds at most WithMaxItemsHeld elements
//     per transform (plus one per key with WithOrdered); on unbounded input
//     the rest wait in bag state, on bounded input ProcessElement waits for
//     room.
//   - When unbounded input ends, every pending element is committed on
//     prism and Dataflow. Flink drops processing-time timers at its final
//     watermark: there the end-of-input drain (WithEndOfInputDrain, on by
//     default for --runner=flink) runs what was never committed.
//   - A fn's Revert runs for committed failures only (on Flink, from a
//     checkpoint: give --checkpointing_interval).
//
// README's Guarantees and Runners sections say, runner by runner, what was
// run and what was read.
//
// # The wrapped fn
//
// fn is a pointer to a DoFn struct registered in init() (for example with
// register.DoFn4x1), or a top-level function of the same shape. Its
// ProcessElement runs concurrently for different elements on one DoFn
// instance, so it must be safe for concurrent use; so must StartBundle and
// FinishBundle, which run around each element, whose outputs belong to
// that element. The context fn gets is cancelled when its element's work is
// cancelled; a fn that ignores it keeps its slot until it returns. Setup
// runs once per DoFn instance; Beam Go drops the instance of a failed
// bundle without calling Teardown, so keep what Setup opens shared and
// bounded (a process-wide client).
//
// # Watching it
//
// WithListener sends each element's events (accepted, started, succeeded,
// retrying, failed, committed, cancelled, rescheduled, deduplicated,
// progress) to a Listener on the worker: LogListener, JSONLinesListener
// and TimingListener are ready ones; the fn reports progress with
// ReportProgress. Beam metrics in the transform's scope count the same
// events (see MetricAccepted for the table).
//
// # Limits
//
//   - Keys must encode deterministically: integers, strings, bools,
//     []byte, and arrays, slices and structs of those.
//   - Session windows work before a GroupByKey merges them; an element in a
//     merged session, or one whose timestamp was moved out of its window, is
//     a failure record of kind KindWindow (never called).
//   - In sliding windows the fn is called once per window an element is in.
//   - On prism, a busy key's last results wait for a backstop timer when its
//     input stops: 0.5 to 3 s at the default callback frequency of 1 s.
//   - A hot key's callback reads its whole backlog when a place is free:
//     keep a hot key's backlog bounded (a source rate under capacity, or
//     more keys).
//   - Updating a running unbounded pipeline from a version whose state this
//     one does not read needs a drain of the pipeline first: see
//     DESIGN.md, "State across versions".
package async

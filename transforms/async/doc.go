// Package async runs a slow, synchronous Beam DoFn (a call to a web service,
// a model, a database) asynchronously over keyed input, with every output
// committed exactly once.
//
//	out := async.ParDo(s, &myDoFn{...}, keyed, async.WithParallelism(64))
//
// keyed is a PCollection<KV<K, V>>; myDoFn is the DoFn you already have, in
// any shape beam.ParDo takes over KV input (see TryParDo); out is
// PCollection<O>, or PCollection<KV<K2, V2>> for a fn that outputs pairs.
// Each output carries the event time and the window of the element it came
// from, as a plain beam.ParDo's would.
//
// BatchParDo does the same for a fn whose ProcessBatch takes many elements
// per call (a bulk endpoint, a model server): the pool gathers batches
// (state.BatchConfig) and counts requests, and each element keeps its own
// commit, retries and failure record (batch.go, batchfn.go).
//
// Enrich looks something up by each record's key and merges the answer into
// the record (Beam Python's Enrichment): one lookup per key, answers cached
// per key, and a join per record (enrich.go); BatchEnrich looks up many
// keys per call (enrichbatch.go).
//
//	out := async.Enrich(s, &customerLookup{...}, ordersByCustomer, joinOrder)
//
// # How it works
//
// Calls run on a pool of goroutines shared by all instances of the
// transform in the worker process (at most WithParallelism at once). The
// transform's DoFn runs in the global window whatever the input's windowing
// (windows.go): on windowed input a step before it wraps each element with
// its window, and steps after it put each output back in exactly that
// window, with the input's windowing strategy. What commits outputs depends
// on the input; the transform picks one of two DoFns at construction:
//
//   - Bounded input (bundle.go): the bundle is the unit of commit and
//     retry, so an element whose call finishes inside its bundle needs no
//     state at all. ProcessElement starts the element and emits every
//     result of its bundle that has finished since; FinishBundle waits for
//     the rest. When WithMaxItemsHeld elements are held, ProcessElement
//     waits for a place while emitting its bundle's results, which bounds
//     memory whatever the bundle's size. Prism hands a bounded stage's whole
//     input to one bundle; Dataflow runs a stateful DoFn over input grouped
//     by key, one key after another, and never fires processing-time timers
//     in batch: this path needs neither state nor timers, so both run it at
//     the pool's speed, at every key shape and in every windowing. With
//     WithOrdered or WithIDFn a variant declares state so that runners
//     group its input by key (one bundle at a time per key).
//   - Unbounded input (stream.go): every accepted element is added to bag
//     state under its key (one state for all the key's windows), the
//     durable record of work in flight. The first ProcessElement of a key
//     in each bundle reads the key's bag once and commits its finished
//     results (turn.go, settle.go): it holds the same state as a timer
//     callback and commits atomically with its bundle. A processing-time
//     timer, held at the earliest pending element's event time, commits
//     the key when timers.Cadence.Plan says: for a quiet key, on the
//     commit grid (C/4, coarser while bundles are long) once its calls are
//     expected to have finished; for a busy key, and at C < 1 s for a
//     key's first element in the worker's first 4 s of setting timers
//     while the pool has room (timers.Cadence.Plan), a backstop beyond its
//     next bundle. No timer is set nearer than the runner's guard
//     (timers.Runner.Guard), which grows while timers fall due inside
//     their keys' bundles (the worker sees it at FinishBundle) and decays
//     once they do not: a runner never fires the timer of a key in a
//     bundle in progress, and prism re-queues it in a loop meanwhile.
//     Elements that find no room wait in a second bag, summarized in the
//     first, so that a commit never reads a key's backlog unless it can
//     start some of it.
//
// An element in bag state that the worker does not know (after a restart, or
// a key that moved) is started again; local work for an element no longer
// in bag state is cancelled through its context by the key's timer. The
// stateful DoFn declares a single timer family: Beam Go v2.77.0 hangs a
// bundle on prism when a DoFn declares two.
//
// One element's path through the stateful DoFn, by file, in order. The
// stream path has four files of its own (stream.go, turn.go, keyview.go,
// settle.go); core.go is shared with the bounded path.
//
//  1. pardo.go, at construction: checks the input (keys.go), the options
//     (options.go, retry.go, priority.go) and the wrapped fn (userfn.go),
//     builds the configuration shipped to workers (config.go), wraps
//     windowed input with its windows (windows.go) and picks the DoFn.
//  2. stream.go: ProcessElement takes the key's turn (turn.go): open reads
//     the key's bags once per bundle (keyview.go: view), the element is
//     encoded and identified (core.go: prepare), settle commits what has
//     finished (settle.go), accept gives the element its ID and place in
//     the key's order and hands it to the worker's pool (core.go: submit;
//     package state runs the call with its timeout and retries, as
//     retry.go describes), or queues it (no room, or the key already has
//     elements queued); store writes the bags (keyview.go: write)
//     and plan sets the key's timer (timers.Cadence.Plan).
//  3. settle.go: a later turn of the key (its next bundle's first
//     ProcessElement, or its timer: stream.go OnTimer) emits the finished
//     element's outputs with its timestamp and window (core.go:
//     commitOutputs) and removes it from bag state in the same bundle; a
//     final failure becomes a Failure record (failure.go), compensated
//     after its commit by revert.go. windows.go puts each output back in
//     its element's window; events.go and metrics.go report each step.
//
// On bounded input, bundle.go does steps 2 and 3 in the element's own
// bundle, without state.
//
// # Guarantees
//
//   - Outputs are committed exactly once per element, provided the runner
//     commits a bundle's state changes and outputs atomically, and retries a
//     failed bundle whole (all Beam runners do).
//   - Each output carries its element's event time and window, as a plain
//     ParDo's would, in the global, fixed, sliding and session windows (an
//     element in two sliding windows is called once per window, and gives
//     outputs in each). On unbounded input the commit timer holds the
//     watermark at the earliest pending element (its output timestamp:
//     measured on prism; Flink and Dataflow hold at processing-time timers
//     too, by their sources: Flink since Beam 2.41), so an element that
//     arrives on time gives outputs that are on time for what follows; one
//     that arrives late (within allowed lateness) gives
//     outputs later still, by its call and its commit, which a later
//     GroupByKey drops once they are past its allowed lateness.
//   - Panes are not kept: Beam Go lets a DoFn set an output's timestamp,
//     not its pane, so an output carries the pane of whatever the transform
//     is processing when it emits it (another input element's, or, from a
//     timer or the end of a bundle, Beam's "no firing" pane: timing
//     unknown, first and last).
//   - Calls are made at least once: a worker restart, a failed bundle or a
//     moved key runs an element again, so side effects must be idempotent.
//   - Identity is (key, window, ID). Without WithIDFn every input record is
//     an element of its own, as under a plain ParDo: two records with equal
//     keys and values are called and emitted twice. On unbounded input, an
//     element that a failed bundle accepted is recognised when the runner
//     retries that bundle on the same worker while its key has other
//     elements pending (same state, same records: the same ID), and takes
//     its running or finished call over; a key with nothing pending starts
//     afresh, and calls again. On bounded input a retried bundle calls
//     again. WithIDFn states which records are
//     one element: records of one key and window with equal IDs pending at
//     the same time are one element (one call, one output); a record whose
//     ID arrives after the first was committed is a new element.
//   - A failed attempt (an error, a panic, or a timeout from WithCallTimeout)
//     is retried up to WithMaxAttempts after WithBackoff, unless WithRetryIf
//     says no or the fn returned Permanent(err). With unbounded input the
//     retry waits in bag state, with its attempt count and due time, holding
//     no pool slot; with bounded input it waits in the worker on a timer,
//     holding neither a slot nor a place in flight.
//   - A call that the worker interrupts (an eviction, a restart) never
//     counts as a success, whatever the fn returns: its element is started
//     again, or its bundle fails.
//   - An element that fails for good is written to the failure output of
//     ParDoWithFailures exactly once, in its element's window (the record's
//     Window names it); without a failure output it fails its key's commit
//     (or its bundle) with the cause (a panic with its stack), so the runner
//     retries it. Nothing is dropped silently.
//   - When an unbounded input ends (or a job is drained), prism keeps
//     firing the keys' commit timers until every pending element is
//     committed (run), and Dataflow does too by what Beam's sources and
//     issues say (read). Flink does not (run on Beam 2.67's Flink runner;
//     read in runners-core's StatefulDoFnRunner.onTimer): once its final
//     watermark is in, it ignores processing-time timers of the global
//     window, and elements still pending then are never committed.
//     WithEndOfInputDrain fixes that, and is on by default for unbounded
//     input built with --runner=flink: the stream DoFn also
//     sends, from each key callback and with its bag change, the elements
//     it accepted and those it committed to a second stateful DoFn keyed
//     alike (escrow.go), which holds the difference under an event-time
//     timer near the global window's end (held at the earliest such
//     element); that timer fires only at the end of input, and runs what is
//     left as the bounded path does: each element's outputs or failure
//     record, once, in its window. An element whose call finished on the
//     worker is committed from that call. Each record costs the same
//     whatever its key holds; the drain reads a key's escrow once. A
//     second DoFn, because Beam Go v2.77's harness can hang bundles of a
//     DoFn with two timer families (not re-checked on v2.78). Off by
//     default on other runners, for its cost. The fault simulator models
//     these runners (sim_test.go, simModel).
//   - The fn's Revert method (compensation for a saga) runs only for an
//     element whose failure the runner has committed: in a step after the
//     transform, behind a reshuffle, so never for an element that a retried
//     bundle then ran to success, where a reshuffle is a checkpoint (prism,
//     Dataflow). On Flink a reshuffle is a rebalance: a restore from a
//     checkpoint could replay an element Revert has seen fail, so there the
//     step must require stable input (RequireStableInput, which the
//     launchers apply on Flink: Flink then holds the step's input until a
//     checkpoint holds it, and requires checkpointing, which the launchers
//     pass from --checkpointing_interval; its batch mode ignores the mark,
//     and such a job is refused unless --flink_batch_revert accepts that).
//     It
//     runs at least once per record (a failed bundle of that step is
//     retried), and only with ParDoWithFailures: without a failure output
//     no failure is final, since the runner retries the key's commit. Its
//     error arrives as a *FailureError holding the record.
//
// # The wrapped fn
//
// fn is a pointer to a DoFn struct registered in init() (for example with
// register.DoFn4x1), or a top-level function of the same shape. Its Setup is
// called once per DoFn instance of the transform, and its Teardown after the
// instance's last call returns, when the runner tears the instance down. Beam
// Go v2.77.0's harness never does: it drops the instance of a failed bundle
// and makes a new one (whose Setup runs again) without Teardown. Keep what
// Setup opens shared and bounded (a process-wide client), not one per
// instance. StartBundle, ProcessElement and
// FinishBundle are called in sequence for every element, and concurrently for
// different elements on one instance: they must be safe for concurrent use.
// Outputs of FinishBundle belong to that element. The context passed to fn is
// cancelled when its element's work is cancelled. A fn that ignores its context
// keeps its pool slot until it returns.
//
// # Memory and buffers
//
// One worker process holds, per transform, at most WithMaxItemsHeld elements
// (default 64 x parallelism; for BatchParDo 64 x parallelism x batch size):
// admitted and waiting, running, or finished and awaiting their commit. Of
// those, at most WithMaxItemsToBuffer (default 2 x parallelism, as in Beam
// Python's AsyncWrapper; for BatchParDo 2 x parallelism x batch size) are in
// flight, handed to the slots; the others wait in the worker, by priority, for a place. A
// waiting element has no goroutine. With WithOrdered on unbounded input the
// worker holds one more element per key (its earliest, started so the key
// cannot be stuck; still one after a failed callback of the key); on
// bounded input, one more per key whose earliest element was evicted and
// started again. On
// unbounded input, elements beyond that wait in bag state only, which the
// runner keeps, and are started by their key's callbacks as room frees: a
// place that frees while keys wait is kept for the key that has waited
// longest, one place per key at a time, until its next callback, so a key
// with waiting elements starts one within as many freed places as there
// are keys waiting before it. On bounded input ProcessElement waits for
// room instead.
//
// Work of an owner that showed no sign of life for the stale period (max(20
// x callback frequency, 30 s)): a key that moved to another worker, or a
// bundle that failed without a word to the transform (an earlier step of
// its stage failed), is evicted when, and only when, a live owner needs its
// place. A key that has a callback after its work was evicted is late, not
// gone: its work is evicted again only once it has had no callback for
// twice as long as it was away (at most ten stale periods), so each of its
// elements is called again for eviction at most once while its callbacks
// come no later than that, and the places of a key that then moved away
// free within a time its own lateness sets. A bundle whose own method
// fails, or whose emit panics (a later step failed), releases its work at
// once: Beam Go drops a failed bundle's DoFn instance and never calls its
// Teardown. A process keeps a transform's pool and listener for
// ReleaseAfter (10 minutes) after the last use, once nothing in it is
// running (state.Registry).
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
// view: a callback that the runner retries reports its events again. The
// transform's Beam metrics count the same transitions, on bounded and
// unbounded input alike: the table above MetricAccepted says which.
//
// # Limits
//
//   - Input must be KV with a key type whose encoding is deterministic
//     (integers, strings, bools, []byte, and arrays, slices and structs of
//     those).
//   - Session windows work before a GroupByKey merges them (each element in
//     [t, t+gap)); an element in a merged session, or one whose timestamp a
//     DoFn moved out of its window, cannot get its window back from its
//     timestamp: it is a failure record of kind KindWindow (never called)
//     with ParDoWithFailures, and otherwise fails its bundle with the
//     reason.
//   - In sliding windows the wrapped fn is called once per window an element
//     is in (a plain ParDo whose fn ignores windows is called once).
//   - Prism (v2.77.0) re-queues, in a loop, a processing-time timer that falls
//     due while its key is in a bundle, so a busy key's timer is a backstop
//     a few of its gaps ahead: when such a key's input stops, its last
//     results wait for that backstop (0.5 to 3 s at the default C).
//   - A hot key's callback reads its pending bag (at most WithMaxItemsHeld
//     entries) and, when a place is free, its whole backlog: keep a hot
//     key's backlog bounded (a source rate under capacity, or more keys).
//   - Updating a running unbounded pipeline from a version whose state this
//     one does not read (before windows were carried; back to one before
//     the combined bag entries; a job that ran with WithEndOfInputDrain
//     before its escrow became one log, state "asyncEscrow", whose old
//     bags this version does not read; one whose timer families had no
//     suffix, before each transform named its own): drain the pipeline
//     first. A
//     key's drain summary (state "asyncEscrowSummary") may be missing:
//     its log is then read once, and records without a hold are read too.
//   - With WithEndOfInputDrain switched on in a running pipeline, the
//     commits of elements accepted before it are early releases that no
//     escrow cancels: each stays named in its key's drain log (a few bytes)
//     until the runner collects the window's state.
package async

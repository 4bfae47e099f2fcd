// Package portable completes the job this program sends to a portable job
// server (Flink's, Spark's, a prism job server, Beam Python's): the
// top-level pipeline options Beam Go does not send, and the edits the
// project's transforms make to the job's model. It does so whichever
// launcher sends the job: runner.Run calls Complete itself, and Install
// makes beamx.Run and ptest (Beam Go's portable runner) pass through it too.
//
// Beam Go sends its flags nested under one option, beam:option:go_options:v1,
// which a Java job server never reads. So a Go job on Flink would run with
// Flink's defaults for a batch job. For a Flink job with unbounded input
// Complete sends (read in Beam's Flink runner; the first two also run):
//
//   - streaming=true: Flink then closes bundles by size and time, not only
//     at watermarks;
//   - shutdown_sources_after_idle_ms=15000: the job's Impulse source stays
//     up for a while after its one element instead of finishing at once,
//     which would leave a stage whose timers hold the watermark spinning
//     forever;
//   - finish_bundle_before_checkpointing=true: a checkpoint finishes an open
//     bundle before its barrier, instead of buffering the bundle's output
//     until the stage's next bundle, which may never come.
//
// With --checkpointing_interval it sends Flink's checkpointing_interval and
// enable_stable_input_drain. Every --runner_option=name=value goes to any
// portable runner as beam:option:name:v1 and wins over the values above,
// but for experiments, refused: it would replace the job's whole list
// (pass them with --experiments).
//
// A job server named only by --runner=universal (or portable) is asked
// which runner it is (the JobService's DescribePipelineOptions: Flink's
// lists flink_master).
package portable

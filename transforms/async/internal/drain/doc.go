// Package drain is the end-of-input drain of the unbounded path of
// transforms/async. Path runs the callbacks of the drain's DoFn (escrowFn
// in the front, which owns the two bags and the timer the job graph
// names): it applies the stream's records (apply.go) and, at the end of
// input, runs what a key's book holds through the bounded path (drain.go).
// The package also holds the data: the record the stream sends per key
// callback (record.go), the book a key's log amounts to (book.go) and the
// summary each record reads instead of the log (summary.go). They are
// state that outlives a worker: a version must read what the one before it
// wrote.
//
// A runner may end a stream
// without firing the processing-time timers its keys still have: Flink's
// portable runner ignores them once the input watermark has passed the
// global window's end (runners-core's StatefulDoFnRunner), so the elements
// those keys held would never be committed. To lose none, streamFn sends,
// next to its outputs and in the same callback as the bag change, one
// record per key callback to a second keyed output: the elements it
// accepted, those it committed (emitted, or failed for good), the key's
// hold after the callback (the earliest event time of its pending and
// queued elements, or none) and an ordinal (NextOrdinal) that orders the
// records of a key. escrowFn, a second stateful DoFn keyed alike, keeps
// each key's escrowed elements minus its released ones as a log in one bag
// (Book), and a summary in another (Summary). An event-time timer near
// the global window's end (drainFiring) is held where the summary says,
// and set again only when that moves. The timer fires
// only once the input watermark has passed the end of time and streamFn's
// own holds are gone; what it finds then was never committed by streamFn
// and never will be (drain.go). On runners that fire streamFn's
// timers until its keys are empty (prism; Dataflow, as read) every escrow
// has been released by then and the timer finds nothing. Opt-in
// (WithEndOfInputDrain), for its cost.
//
// A record costs the same whatever the key holds: it reads the summary,
// appends its body to the log, and rewrites the summary. The log is read
// only by the drain, by the first record of a key, by every record once a
// drain has run (ErrDrainedTwice), by a record without a hold (an earlier
// version's), and by a rewrite as the book it amounts to, which the
// summary's counts call for once cancelled pairs weigh enough
// (Summary.CompactDue): a rewrite reads at most a few elements per
// element appended since the last one.
//
// The timer is held at the hold of the newest record applied (by ordinal); a
// rewrite that finds nothing held clears it until the next record. Records
// may arrive in any order (prism orders a stage's elements by timestamp,
// Dataflow promises no order, Flink keeps a key's order). The hold is never
// after an element the drain or the stream has still to commit: one whose
// escrow was applied was accepted at or before the newest record, so if it
// is pending now it was then, and that record's hold is at or before it; one
// whose escrow has not arrived holds the watermark by its record in flight,
// whose timestamp is at or before it. Once every record has arrived (an
// event-time timer fires only after the watermark, which records in flight
// hold), the newest is the key's last callback and its hold is exact. A
// key's callbacks run one at a time, and ordinals increase within a process;
// a key that moves between workers relies on their clocks agreeing to better
// than the move takes. A key whose log a read finds empty leaves no state; a
// record older than the newest that comes after that starts the summary
// again with its own hold, which is no later than what it escrows, and the
// next records correct it.
//
// Two DoFns, not one with two timer families: Beam Go v2.77's harness can
// hang a bundle of a DoFn that declares two (see chooseDoFn in the front's pardo.go).
package drain

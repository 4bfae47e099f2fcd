// Package timers decides when the async transform's commit timers fire: of
// the design's "sets a processing-time timer on a round increment of the
// callback frequency", the instant.
//
// It is Beam-free, and unrelated to Beam's core/timers, which declares
// timer families: this package picks the instants the transform sets its
// one family's timers for.
//
// [Cadence] holds every duration derived from the callback frequency C.
// [Cadence.Plan] is the one decision of when a key's timer comes: a pure
// function of [Facts] measured at the end of the key's callback (what the
// key holds, the pool's load, and the runner's pace). Its instants are on
// the commit grid ([Cadence.Grid], counted from the Unix epoch), so keys
// share instants and a runner delivers their callbacks together, except a
// retry's due time, which is kept as it is. At a stream's start every key
// is new, and a key's first element is planned as a busy key's.
//
// [Pace] records each key's timer as the worker set it and, when a bundle
// ends, which of its keys' timers fell due while the bundle held them
// (overruns); its [Runner] reading sets a guard ([Runner.Guard]) that no
// timer is set nearer than. A runner does not fire a timer of a key that is
// in a bundle in progress; prism v2.77 puts such a timer back in a loop that
// takes the CPU the bundles need, so a timer that tends to fall due inside
// its key's bundles must move out by itself, and come back once the runner
// is quick again. The same reading carries how long the worker's bundles
// last: keys' timers then go on a coarser step of the grid, so that the
// runner delivers fewer, fuller timer bundles; and a busy key's timer goes
// past its next bundle, judged from the longest recent bundle and the one
// in progress ([Facts].BundleAge), since the guard learns of a timer put back
// only once its bundle has ended.
//
// [Clock] is the time source; [Manual] is a clock that tests move by hand.
package timers

// Package timers decides when the async transform's commit callbacks fire.
//
// A quiet key's commit timer is set for when its started work is expected to
// have finished, rounded up to the commit grid ([Grid]: a quarter of the
// callback frequency C, counted from the Unix epoch). Every key shares the
// grid's instants, so a runner delivers the timers of many keys together, in
// one bundle, and a result that finishes when expected waits at most a grid
// step for its commit.
//
// A busy key ([BusyWithin]: an element within max(2C, 2 s) of its last) is
// committed by its own bundles; its timer is a backstop ([BusyBackstop]:
// three mean gaps between its elements, from max(C/2, 250 ms) to
// max(2C, 2 s)) on a quarter round of C ([PhaseSlots]), far enough ahead
// that it rarely falls due while the key is in a bundle, which prism
// re-queues in a loop.
//
// [Clock] is the time source; [Manual] is a clock that tests move by hand.
package timers

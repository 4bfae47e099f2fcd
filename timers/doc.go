// Package timers decides when the async transform's commit callbacks fire.
//
// A key's commit timer fires on a round increment of the callback frequency,
// shifted by a phase derived from the key's encoded bytes: every element of a
// key asks for the same instant, so a busy key does not push its own commit
// back, and keys spread over a few instants of the period ([PhaseSlots])
// instead of all firing together, while the keys of one instant are still
// delivered together, in one bundle. The phase is a hash, not a random
// number, so it is the same on every worker and after a restart, and no
// global random generator is touched.
//
// While a key still has work, its callback may re-arm earlier than the next
// round (see [Rearm]) so that a pool slot freed mid-round does not sit idle.
//
// [Clock] is the time source; [Manual] is a clock that tests move by hand.
package timers

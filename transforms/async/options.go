package async

// The options of the pool, the commit timers, the bounds on what a worker
// holds, element identity and the end-of-input drain. Retries, protection,
// the cache, batches, listeners, order and priority have files of their
// own.

import (
	"fmt"
	"time"
)

// WithParallelism sets the most calls of the wrapped fn that run at once in
// one worker process, across all bundles and DoFn instances of this
// transform. Must be > 0. Default: DefaultParallelism (16). Set it to what
// the service takes at once, or use WithAdaptiveParallelism: a call cut at
// its timeout frees its slot here, not the server's. A worker whose
// service accepts a quarter of n or fewer at once while refusing over 10%
// of its answers for load logs a warning saying so, once.
func WithParallelism(n int) Option {
	return func(s *settings) {
		if n <= 0 {
			s.errs = append(s.errs, fmt.Errorf("WithParallelism(%d): parallelism must be > 0", n))
			return
		}
		s.parallelism, s.parallelismSet = n, true
	}
}

// WithCallbackFrequency sets C, the period every commit timer on unbounded
// input is derived from (timers.NewCadence). A quiet key's results wait
// about C/4 past their expected end for their commit; a busy key's are
// committed by its own next bundle, or by a backstop of at most
// max(2 s, C/2) when its elements stop. Timers go on a coarser step, up to
// C, while the runner's bundles last longer than C/4, and further out
// while the runner is late with timers (timers.Cadence.Plan). Longer means fewer timer
// callbacks (less runner CPU over many keys) and longer waits. Must be > 0.
// Default: DefaultCallbackFrequency (1 s).
func WithCallbackFrequency(d time.Duration) Option {
	return func(s *settings) {
		if d <= 0 {
			s.errs = append(s.errs, fmt.Errorf("WithCallbackFrequency(%v): the frequency must be > 0 (a zero period would fire without end)", d))
			return
		}
		s.callbackFrequency = d
	}
}

// WithMaxItemsToBuffer sets how many elements one worker process has in
// flight for this transform at once: handed to the pool's slots, waiting for
// one or running (as max_items_to_buffer of Beam Python's AsyncWrapper counts
// the work submitted to its thread pool). Admitted elements beyond it wait in
// the worker, by priority, and move up as calls finish. Must be at least the
// parallelism. Default: max(2*parallelism, 10).
//
// Finished results waiting for their key's commit do not count here. The
// bound on what a worker holds, and on admission, is WithMaxItemsHeld.
func WithMaxItemsToBuffer(n int) Option {
	return func(s *settings) {
		if n <= 0 {
			s.errs = append(s.errs, fmt.Errorf("WithMaxItemsToBuffer(%d): the buffer must be > 0", n))
			return
		}
		s.buffer = n
	}
}

// WithMaxItemsHeld sets how many elements one worker process holds for this
// transform at once: waiting to run, in flight (see WithMaxItemsToBuffer), or
// finished and waiting for their key's commit. It is the bound on worker
// memory (see the package doc): an element that finds no room stays in bag
// state only and is started by its key's callback once there is room. Must
// be at least the buffer. Default: max(64*parallelism, buffer); for
// BatchParDo max(64*parallelism*batch size, buffer) (parallelism*batch size
// elements are in flight at once, so memory grows with the batch size).
//
// Because results keep their places until committed, it also caps
// unbounded throughput at about held / (call latency + commit delay)
// elements per second, where the commit delay is the time to the key's
// next ProcessElement or timer (see WithCallbackFrequency): keep it above
// rate x (latency + commit delay). On bounded input results are emitted by
// their own bundle as they finish, and ProcessElement waits for a place
// when none is free, so the default is enough at any input size.
func WithMaxItemsHeld(n int) Option {
	return func(s *settings) {
		if n <= 0 {
			s.errs = append(s.errs, fmt.Errorf("WithMaxItemsHeld(%d): the number must be > 0", n))
			return
		}
		s.held = n
	}
}

// WithMaxWait sets how long ProcessElement may wait for room (see
// WithMaxItemsHeld) before it leaves an element queued in bag state only, to
// be started by its key's commit callback. Once a wait has timed out, the
// rest of that bundle does not wait again (room can only come from commits,
// which run in other bundles). It applies to unbounded input only: on
// bounded input ProcessElement always waits for room, which its own
// bundle's results free.
//
// Zero never waits. Must be >= 0. Default: DefaultMaxWait (0). A wait stalls
// the input bundle, which a runner may split.
func WithMaxWait(d time.Duration) Option {
	return func(s *settings) {
		if d < 0 {
			s.errs = append(s.errs, fmt.Errorf("WithMaxWait(%v): the wait must be >= 0", d))
			return
		}
		s.maxWait = d
	}
}

// WithIDFn says which input records are one element: fn is a registered
// top-level function func(V) string over the input's value type
// (register.Function1x1(fn) in an init(); the error gives the line).
// Records of one key and window with equal IDs that are pending at the same
// time are one element: called once, output once; a record whose ID comes
// after the first was committed is a new element. On bounded input the
// transform then declares state, so that runners hand a key's records to
// one bundle at a time (copies in concurrent bundles would not meet); a
// bundle takes records faster than calls finish, so there "pending at the
// same time" is most often the key's whole input: copies far apart in it
// are one element.
// Default: none, every input record is an element of its own, as under a
// plain ParDo.
func WithIDFn(fn any) Option {
	return func(s *settings) { s.idFn = fn }
}

// WithEndOfInputDrain makes unbounded input lose nothing when it ends on a
// runner that stops firing processing-time timers then: Flink's portable
// runner ignores them once the watermark has passed the end of the global
// window (a bounded source read in a streaming job, a periodic.Impulse with
// an end, a drained job), so the elements the keys still hold would get no
// output and no failure record. With it, each element the transform
// accepts is also escrowed with a second stateful DoFn, keyed alike, until
// its output is committed, and that DoFn runs at the end of input whatever
// was never committed (an event-time timer, which Flink fires), as the
// bounded path does: outputs or a failure record, once, in the element's
// window. A drained element is called again, with a fresh count of
// attempts, unless its call had finished.
//
// It costs, per key callback, a keyed record with the elements accepted
// (their values), the IDs of those committed and the key's hold, and, in
// escrowFn, a read and a rewrite of a small summary and an append to a
// log: the same whatever the key holds. The log is read again only when
// its cancelled pairs outweigh the rest, which spreads its cost over the
// records since; it names at most about twice the elements escrowed and
// not committed (or committed before their escrow arrived), besides those
// a drain ran. A key left empty keeps no state. At the end of input the
// drain reads each key's log once; an element whose call the stream
// finished on that worker is committed without calling again, and the
// stream's other calls there give up their places to the drain at once.
// On runners that fire the commit timers until every key is empty (prism,
// and Dataflow as read) it never runs anything. On a runner that fires
// event-time timers before the watermark reaches them (Beam Python's
// portable job service, integration/watermark_test.go) it would run
// elements the stream still commits: the transform then fails the job. Not
// needed on bounded input.
// Default: off.
func WithEndOfInputDrain() Option {
	return func(s *settings) { s.drain, s.drainSet = true, true }
}

// WithoutEndOfInputDrain turns the end-of-input drain off where it would be
// on by default (unbounded input built for --runner=flink). On Flink the
// elements still pending when the input ends, or when the job is drained
// (flink stop --drain), then get no output and no failure record: Flink
// drops the commit timers of the global window once its final watermark is
// in. The transform says so in a log line, and a job server that is Flink
// takes the job all the same.
func WithoutEndOfInputDrain() Option {
	return func(s *settings) { s.drain, s.drainSet = false, true }
}

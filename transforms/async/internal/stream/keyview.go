package stream

// What a Path keeps: the DoFn's bags and timer, and what one bundle knows
// of each key's state: its pending elements (of every window: the DoFn
// runs in the global window, see the front's windows.go), read once at the
// bundle's first touch of the key (keyread.go) and then kept exact by
// applying the bundle's own changes, which write writes back (keywrite.go).

import (
	"math/rand/v2"
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/drain"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// Names of the two bags, as they appear in the job graph.
const (
	// PendingStateID holds the elements the worker holds (started,
	// finished, or waiting out a retry's backoff), and the summary of the
	// queued ones.
	PendingStateID = "asyncPending"
	// QueuedStateID holds the elements that found no room (see
	// WithMaxItemsHeld), until a callback of their key has room to start
	// them. Keeping them apart means a callback reads and rewrites only what
	// the worker holds, never the backlog of an overloaded key.
	QueuedStateID = "asyncQueued"
)

// CommitFamily begins the name of streamFn's processing-time timer
// family; the transform's TimerSuffix ends it.
const CommitFamily = "asyncCommit"

// EscrowEmit is streamFn's third output: per key callback, the records of
// the end-of-input drain (package drain), keyed by the callback's key.
type EscrowEmit = func(beam.EventTime, beam.X, []byte)

// Path runs a streamFn's callbacks: the key's lifecycle steps
// (turn.go) over the DoFn's bags and timer. Committing from ProcessElement
// too is what keeps a busy key moving: a runner does not fire the timer of
// a key that is in a bundle in progress (prism defers it), so under steady
// input a key's timer could wait until the input stops, while its
// ProcessElement holds the same state and commits atomically with its
// bundle just the same.
type Path struct {
	*worker.Core
	// pending, queued and commit are the DoFn's (see streamFn).
	pending, queued *beamstate.Bag[[]byte]
	commit          *beamtimers.ProcessingTime

	views     views     // this bundle's keys
	lastSweep time.Time // see sweepUnbuffered
}

// New runs the callbacks of a DoFn with core c, bags pending and
// queued (see PendingStateID, QueuedStateID) and timer commit.
func New(c *worker.Core, pending, queued *beamstate.Bag[[]byte], commit *beamtimers.ProcessingTime) *Path {
	return &Path{Core: c, pending: pending, queued: queued, commit: commit}
}

// keyState is the state of one key that a callback may write:
// the two bags, and nothing else per key (even the order of WithOrdered lives
// in the elements), so an emptied key leaves no state behind. The provider is
// the current invocation's.
type keyState struct {
	bag, queue *beamstate.Bag[[]byte]
	sp         beamstate.Provider
}

// pending is one element in a key's bag: its envelope and encoded bytes.
type pending struct {
	raw []byte
	env state.Envelope
}

// keyView is a bundle's view of one key.
type keyView struct {
	owner string // the pool owner of the key's tasks: the encoded key
	key   any
	kb    []byte
	// entries are the pending elements, one per element (window and ID), in
	// the order they were read or added; byID indexes them by
	// state.ElementID.Base.
	entries []*pending
	byID    map[state.ElementID]*pending
	maxSeq  int64
	// nonce names the incarnation of the key's state (see
	// state.ElementID): read from it, or new for a key found empty.
	nonce uint64
	// queue summarizes the queued elements; queued holds them once read
	// in this bundle (queueRead).
	queue     state.QueueSummary
	queued    []*pending
	queueRead bool
	// What write has to do: rewrite the pending bag (changed: it holds
	// elements that entries no longer do, or older forms of them), else
	// append added to it; write the queue summary (in the same entry);
	// rewrite the queue bag (queueChanged), else append toQueue to it.
	changed, summaryChanged, queueChanged bool
	// summaries counts the entries of the pending bag that hold a queue
	// summary (one is current, the others superseded).
	summaries int
	added     [][]byte
	toQueue   []*pending
	// committed: a callback of this bundle has committed the key; res is
	// what that commit left for the key's timer.
	committed bool
	res       commitResult
	// seen is when the key last received an element on this worker before
	// this bundle (zero: not while it had work here), and arrivals when its
	// elements came, this bundle's included once one came (arrived; see
	// state.Pool.Touch).
	seen     time.Time
	arrivals state.Arrivals
	arrived  bool
	// plan is the key's timer in force at the bundle's first touch, as this
	// worker set it (planned: there is one and it has not fired in this
	// bundle); FinishBundle reports it to the pool's pace.
	plan    timers.Plan
	planned bool
	// toEscrow and released make this callback's record for the drain
	// (package drain): elements accepted, and elements committed; escrowMin and
	// releasedMin their earliest event times. store sends and resets them.
	// Kept only when escrowing (WithEndOfInputDrain), the one gate of the
	// drain's records.
	escrowing              bool
	toEscrow               [][]byte
	released               []drain.ID
	escrowMin, releasedMin int64
}

// views is what a stateful DoFn knows of its keys for one bundle;
// StartBundle resets it.
type views struct {
	byOwner map[string]*keyView
	// wait is how long an element may still wait for room in this bundle:
	// WithMaxWait until one wait times out (room then comes only from
	// commits in other bundles, so waiting again would only stretch this
	// one).
	wait time.Duration
	// began is when the bundle started (timers.Pace.BundleEnded).
	began time.Time
}

// commitResult is what a commit leaves for the key's next callback.
type commitResult struct {
	queued         int       // elements waiting in bag state for room
	waitingRetries int       // elements waiting out their backoff
	waitingTurn    int       // finished results waiting behind an earlier element (WithOrdered)
	dueNext        time.Time // when the first of those is due (zero: none)
	// running counts the key's elements whose calls are running here, and
	// shortestRun is how long the most recent of those calls has run (see
	// timers.Cadence.Plan).
	running     int
	shortestRun time.Duration
}

func (v *keyView) add(p *pending) {
	v.entries = append(v.entries, p)
	v.byID[p.env.Element(v.owner).Base()] = p
	v.maxSeq = max(v.maxSeq, p.env.Seq)
	if v.nonce == 0 {
		v.nonce = p.env.Nonce
	}
}

// escrow notes an accepted element for the callback's record to the drain.
func (v *keyView) escrow(p *pending) {
	if !v.escrowing {
		return
	}
	if len(v.toEscrow) == 0 || p.env.EventTimeMs < v.escrowMin {
		v.escrowMin = p.env.EventTimeMs
	}
	v.toEscrow = append(v.toEscrow, p.raw)
}

// release notes a committed element (emitted, or failed for good) for the
// callback's record to the drain.
func (v *keyView) release(env state.Envelope) {
	if !v.escrowing {
		return
	}
	if len(v.released) == 0 || env.EventTimeMs < v.releasedMin {
		v.releasedMin = env.EventTimeMs
	}
	v.released = append(v.released, drain.IDOf(env))
}

// releaseCopy notes for the callback's record to the drain a copy dropped
// for the element kept (WithIDFn: two records with one ID), unless both are
// one element (the same entry written twice, or a retry written back): a
// copy accepted as an element of its own was escrowed, and leaves the key
// here.
func (v *keyView) releaseCopy(dropped, kept state.Envelope) {
	if drain.IDOf(dropped) != drain.IDOf(kept) {
		v.release(dropped)
	}
}

// keep replaces the entries with those given (the others were committed,
// or failed for good, in this bundle), marking the bag for a rewrite.
func (v *keyView) keep(entries []*pending) {
	v.entries = entries
	v.byID = make(map[state.ElementID]*pending, len(entries))
	for _, p := range entries {
		v.byID[p.env.Element(v.owner).Base()] = p
	}
	v.changed = true
}

// enqueue adds an element that found no room to the queue.
func (v *keyView) enqueue(p *pending) {
	if v.queue.Count == 0 {
		v.queue.MinEventTimeMs = p.env.EventTimeMs
	}
	v.queue.Count++
	v.queue.MinEventTimeMs = min(v.queue.MinEventTimeMs, p.env.EventTimeMs)
	v.queue.MaxSeq = max(v.queue.MaxSeq, p.env.Seq)
	v.summaryChanged = true
	if v.queueRead {
		v.queued = append(v.queued, p)
		v.queueChanged = true
		return
	}
	v.toQueue = append(v.toQueue, p)
}

// dequeue keeps only rest in the queue (the others started, and moved to
// the pending elements).
func (v *keyView) dequeue(rest []*pending) {
	v.queued = rest
	v.queueChanged, v.summaryChanged = true, true
	v.queue.Count = int64(len(rest))
	v.queue.MinEventTimeMs = int64(mtime.MaxTimestamp)
	for _, p := range rest {
		v.queue.MinEventTimeMs = min(v.queue.MinEventTimeMs, p.env.EventTimeMs)
	}
}

// nextSeq is the sequence number of the key's next element: after every one
// this incarnation of the key's state has given (the summary keeps the
// highest, see writePending). It is the element's place in the key's order
// (WithOrdered), and with the nonce its task in the pool (state.ElementID). A key
// whose bags have emptied starts a new incarnation, with a new nonce, at 1,
// which keeps the order, since nothing of it is pending.
func (v *keyView) nextSeq() (nonce uint64, seq int64) {
	if v.nonce == 0 {
		v.nonce = newNonce()
	}
	if v.queue.Count > 0 {
		return v.nonce, max(v.maxSeq, v.queue.MaxSeq) + 1
	}
	return v.nonce, v.maxSeq + 1
}

// newNonce names a new incarnation of a key's state: random, never zero
// (zero marks state written before nonces).
func newNonce() uint64 { return rand.Uint64() | 1 }

// empty reports whether the key has nothing pending or queued.
func (v *keyView) empty() bool { return len(v.entries) == 0 && v.queue.Count == 0 }

// inOrder returns the entries in acceptance order (WithOrdered); entries
// from a version that kept no order come first, in bag order.
func inOrder(entries []*pending) []*pending {
	out := append([]*pending(nil), entries...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].env.Seq < out[j].env.Seq })
	return out
}

// outputTimestamp is the output timestamp of the key's timer, which holds
// the watermark there: the earliest event time of its pending and queued
// elements, so that none of their outputs is late.
func (v *keyView) outputTimestamp() time.Time { return v.hold().ToTime() }

// hold is the earliest event time of the key's pending and queued
// elements, or mtime.MaxTimestamp when it has none (drain.HoldNone).
func (v *keyView) hold() mtime.Time {
	first := int64(mtime.MaxTimestamp)
	for _, p := range v.entries {
		first = min(first, p.env.EventTimeMs)
	}
	if v.queue.Count > 0 {
		first = min(first, v.queue.MinEventTimeMs)
	}
	return mtime.Time(first)
}

package async

// The simulator's runner for bounded input (bundleFn): the input is cut into
// bundles, each run on a DoFn instance of a worker and committed whole (its
// input consumed, its outputs kept) only if it reaches the end of
// FinishBundle without an error. As in Beam Go's harness, the instance of a
// failed bundle is dropped (never called again, never torn down) and the
// bundle is retried on a new instance of any worker. Faults: a bundle that
// fails silently midway (an earlier step of its stage failed: the transform
// is not told, its work is left to eviction), one whose emit panics midway (a
// later step failed: the transform sees it and must release its work at
// once), a worker restarting in the middle of a bundle, two bundles running
// at once on one worker, duplicate records within a bundle, and worker
// restarts between bundles. A bundle that waits for room makes the
// simulated clock move (real elapsed time), and may not wait longer than
// the stale period.

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
)

// bundleWorker is one worker process: its registry and its DoFn instances.
type bundleWorker struct {
	registry *state.Registry
	fns      []*bundleFn
}

// bundleWorld is the runner and everything it has committed.
type bundleWorld struct {
	*simWorld
	workers []*bundleWorker
	queue   []simElem // input not yet consumed by a committed bundle
	// the next bundle's faults
	silentAt, panicAt, crashAt int // after this many elements (or outputs, for panicAt); -1: no
	dupNext, pair              bool
	delivered                  map[string]int // records, by element name
}

func newBundleWorld(t *testing.T, s simSchedule) *bundleWorld {
	w := &bundleWorld{simWorld: newSimWorld(t, s), silentAt: -1, panicAt: -1, crashAt: -1, delivered: map[string]int{}}
	for i := 0; i < s.worker; i++ {
		wk := &bundleWorker{registry: w.newRegistry()}
		wk.fns = []*bundleFn{w.newBundleFn(wk), w.newBundleFn(wk)}
		w.workers = append(w.workers, wk)
	}
	w.queue = append(w.queue, w.input...)
	for _, e := range w.input {
		w.delivered[e.name()]++
	}
	return w
}

func (w *bundleWorld) newBundleFn(wk *bundleWorker) *bundleFn {
	c := w.instance(wk.registry)
	c.RetryInWorker = true
	return &bundleFn{Core: c}
}

// simBundle is one bundle about to run: where, and on what.
type simBundle struct {
	wk    *bundleWorker
	inst  int
	elems []simElem
}

// take cuts the next bundle of up to n records from the queue, leaving out
// the keys in skip (two bundles running at once on ordered input must not
// share a key, as a runner that groups by key guarantees).
func (w *bundleWorld) take(n int, skip map[string]bool) []simElem {
	var got, rest []simElem
	for _, e := range w.queue {
		if len(got) < n && !skip[e.key] {
			got = append(got, e)
			continue
		}
		rest = append(rest, e)
	}
	w.queue = rest
	return got
}

func keysOf(elems []simElem) map[string]bool {
	m := map[string]bool{}
	for _, e := range elems {
		m[e.key] = true
	}
	return m
}

// deliver runs the next bundle (two at once after "pair"), retrying a failed
// one until it commits.
func (w *bundleWorld) deliver(n, worker, inst int) {
	first := simBundle{wk: w.workers[worker%len(w.workers)], inst: inst % 2, elems: w.take(n, nil)}
	if len(first.elems) == 0 {
		return
	}
	if !w.pair {
		w.untilCommitted(first, worker)
		return
	}
	w.pair = false
	skip := map[string]bool{}
	if w.s.ordered {
		skip = keysOf(first.elems)
	}
	second := simBundle{wk: first.wk, inst: 1 - first.inst, elems: w.take(n, skip)}
	var wg sync.WaitGroup
	results := make([]bundleResult, 2)
	bundles := []simBundle{first, second}
	done := make(chan struct{})
	for i, b := range bundles {
		if len(b.elems) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = w.run(b, -1, -1, -1)
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	w.await(done)
	for i, b := range bundles {
		if len(b.elems) == 0 {
			continue
		}
		r := results[i]
		w.problems = append(w.problems, r.problems...)
		if r.ok {
			w.commits = append(w.commits, r.commits...)
		} else {
			w.untilCommitted(b, worker+1)
		}
	}
}

// await waits for done while the bundles run. When nothing moves for a few
// milliseconds (no task of any worker changes, no output is emitted) a
// bundle is waiting for time to pass, for room: the simulated clock then
// moves a second. A wait of more than the stale period and a few seconds
// without progress is a violation: the places of a dead bundle are evicted
// once it has been silent for the stale period, and a bundle that saw its
// failure holds none. Progress starts the count again, so that a loaded
// machine, whose goroutines look still more often, does not add up waits
// that each ended.
func (w *bundleWorld) await(done <-chan struct{}) {
	limit := w.base.StaleAfter() + 5*time.Second
	waited := time.Duration(0)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	last, still := w.progress(), 0
	paced := time.Duration(0) // simulated time moved for paced attempts since the last progress
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if p := w.progress(); p != last {
			last, still, paced, waited = p, 0, 0, 0
			continue
		}
		if still++; still < 5 {
			continue
		}
		if w.paced() {
			// Attempts the guard paces (or that hold their slot after an
			// overload answer) wait on the simulated clock: move it for
			// them. That is not a bundle waiting for room, but it has a
			// bound too: a pace is at least one attempt a second.
			if paced >= limit+time.Minute {
				w.violation("attempts were paced for %v of simulated time without progress", paced)
				w.finish(done)
				return
			}
			w.clock.Advance(time.Second)
			paced += time.Second
			continue
		}
		if waited >= limit {
			w.violation("a bundle waited more than %v of simulated time for room", limit)
			w.finish(done)
			return
		}
		w.clock.Advance(time.Second)
		waited += time.Second
	}
}

// finish waits for done after a violation, moving the simulated clock on
// so that the bundle's waits on it (for room, for a paced attempt) end and
// the schedule reports its violation rather than hanging the test. A bundle
// still running after a simulated hour is left behind, reported.
func (w *bundleWorld) finish(done <-chan struct{}) {
	for range 3600 {
		select {
		case <-done:
			return
		case <-time.After(2 * time.Millisecond):
		}
		w.clock.Advance(time.Second)
	}
	w.violation("a bundle did not return within a simulated hour of the violation before")
}

// progress is a fingerprint of what the workers' pools hold and of what the
// bundles emitted: it changes while anything moves.
func (w *bundleWorld) progress() [5]int {
	var p [5]int
	for _, wk := range w.workers {
		for _, pool := range wk.registry.Pools() {
			p[0] += pool.Len()
			p[1] += pool.Held()
			p[2] += pool.InFlight()
			p[3] += pool.Unfinished()
		}
	}
	p[4] = int(emitted.Load())
	return p
}

// emitted counts the outputs and failure records of every bundle the
// simulator ran: progress, for await.
var emitted atomic.Int64

// untilCommitted runs b, with the pending faults on its first try, and
// retries it until it commits, each retry on a new instance of the next
// worker (the failed instance is dropped).
func (w *bundleWorld) untilCommitted(b simBundle, worker int) {
	silentAt, panicAt, crashAt := w.silentAt, w.panicAt, w.crashAt
	w.silentAt, w.panicAt, w.crashAt = -1, -1, -1
	if w.dupNext && len(b.elems) > 0 {
		w.dupNext = false
		dup := b.elems[len(b.elems)/2] // a second record of an element, in the same bundle
		b.elems = append(b.elems, dup)
		w.delivered[dup.name()]++
	}
	for try := 0; try < 6; try++ {
		var r bundleResult
		done := make(chan struct{})
		go func() {
			defer close(done)
			r = w.run(b, silentAt, panicAt, crashAt)
		}()
		w.await(done)
		w.problems = append(w.problems, r.problems...)
		if r.ok {
			w.commits = append(w.commits, r.commits...)
			return
		}
		b.wk.fns[b.inst] = w.newBundleFn(b.wk) // the harness drops the failed instance
		silentAt, panicAt, crashAt = -1, -1, -1
		worker++
		b.wk = w.workers[worker%len(w.workers)]
	}
	w.violation("a bundle of %d elements never committed", len(b.elems))
}

type bundleResult struct {
	ok       bool
	commits  []commitRecord
	problems []string // violations seen while it ran
}

// run runs one bundle on b's instance. silentAt stops it after that many
// elements without a word to the DoFn; panicAt makes the emit of that many
// outputs panic; crashAt restarts the worker after that many elements.
func (w *bundleWorld) run(b simBundle, silentAt, panicAt, crashAt int) (r bundleResult) {
	f := b.wk.fns[b.inst]
	c := w.collector()
	c.panicAt = panicAt
	ctx := context.Background()
	var runID string
	defer func() {
		r.commits, r.problems = c.commits, append(r.problems, c.problems...)
		if p := recover(); p != nil { // the runner's side of a panicking emit: the bundle failed
			r.ok = false
			r.problems = append(r.problems, w.leftBehind(b.wk, runID)...)
		}
	}()
	if err := f.StartBundle(ctx, c.emit, c.fail); err != nil {
		return r
	}
	runID = f.path().BundleID()
	for i, e := range b.elems {
		if i == silentAt {
			return r // the bundle failed elsewhere in its stage; the DoFn is never told
		}
		if i == crashAt {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			b.wk.registry.Reset(rctx)
			cancel()
		}
		for _, in := range w.inputsOf(e) {
			if err := f.ProcessElement(ctx, e.ts(), e.key, w.value(in), c.emit, c.fail); err != nil {
				r.problems = append(r.problems, w.leftBehind(b.wk, runID)...)
				return r
			}
		}
		r.problems = append(r.problems, w.bundleBounds()...)
	}
	if err := f.FinishBundle(ctx, c.emit, c.fail); err != nil {
		r.problems = append(r.problems, w.leftBehind(b.wk, runID)...)
		return r
	}
	r.ok = true
	return r
}

// leftBehind: a bundle that saw its own failure keeps no work in its pool.
func (w *bundleWorld) leftBehind(wk *bundleWorker, runID string) []string {
	var out []string
	for _, p := range wk.registry.Pools() {
		if n := len(p.ForOwner(runID)); n > 0 {
			out = append(out, fmt.Sprintf("a bundle that failed in its own methods left %d tasks in its pool", n))
		}
	}
	return out
}

// bundleBounds checks that no worker holds more than WithMaxItemsHeld.
func (w *bundleWorld) bundleBounds() []string {
	var out []string
	for i, wk := range w.workers {
		for _, p := range wk.registry.Pools() {
			if p.Held() > w.s.held || p.Len() > w.s.held {
				out = append(out, fmt.Sprintf("worker %d holds %d tasks (%d with places); held is %d", i, p.Len(), p.Held(), w.s.held))
			}
		}
	}
	return out
}

func (w *bundleWorld) apply(a simAction) {
	switch a.Kind {
	case "deliver", "fire", "lag":
		w.deliver(1+a.B%5, a.A, a.B)
	case "dup":
		w.dupNext = true
	case "failnext":
		if a.A%2 == 0 {
			w.silentAt = a.B % 4
		} else {
			w.panicAt = a.B % 4
		}
	case "twice":
		w.crashAt = a.B % 4
	case "move":
		w.pair = true
	case "advance":
		w.clock.Advance(time.Duration(a.B) * time.Millisecond)
	case "restart":
		wk := w.workers[a.B%len(w.workers)]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := wk.registry.Reset(ctx); err != nil {
			w.violation("restart: %v", err)
		}
		cancel()
		for i := range wk.fns { // a new process: new instances
			wk.fns[i] = w.newBundleFn(wk)
		}
	}
}

// runBundleSchedule runs one schedule of bounded input and returns its
// violations.
func runBundleSchedule(t *testing.T, s simSchedule) []string {
	baseline := runtime.NumGoroutine()
	w := newBundleWorld(t, s)
	for _, a := range s.actions {
		w.apply(a)
	}
	for i := 0; len(w.queue) > 0; i++ {
		w.deliver(5, i, i)
	}
	w.check(w.delivered)
	var regs []*state.Registry
	for _, wk := range w.workers {
		regs = append(regs, wk.registry)
	}
	w.release(regs, baseline)
	return w.problems
}

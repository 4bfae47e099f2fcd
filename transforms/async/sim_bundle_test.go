package async

// The simulator's runner for bounded input in the global window (bundleFn):
// the input is cut into bundles, each run on one DoFn instance of a worker
// and committed whole (its input consumed, its outputs kept) only if it
// reaches the end of FinishBundle without an error. Faults: a bundle that
// fails midway (its instance reused or dropped by the runner), a worker
// restarting in the middle of a bundle, two bundles running at once on one
// worker, copies of an element within a bundle, and worker restarts between
// bundles. A failed bundle is retried at once, on any worker.

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/asyncbeam/asyncbeam/state"
)

// bundleWorker is one worker process: its registry and its DoFn instances.
type bundleWorker struct {
	registry *state.Registry
	base     core
	fns      []*bundleFn
}

// bundleWorld is the runner and everything it has committed.
type bundleWorld struct {
	*simWorld
	workers []*bundleWorker
	queue   []simElem // input not yet consumed by a committed bundle
	// the next bundle's faults
	failAt, crashAt int // fail (or restart the worker) after this many elements; -1: no
	dropOnFail      bool
	dupNext, pair   bool
	// twice lists the elements a bundle met twice after the first copy had
	// been emitted: the copy was a new element, with an output of its own.
	twice map[string]bool
}

func newBundleWorld(t *testing.T, s simSchedule) *bundleWorld {
	w := &bundleWorld{simWorld: newWorld(t, s), failAt: -1, crashAt: -1, twice: map[string]bool{}}
	for _, sw := range w.simWorld.workers {
		c := sw.stream.core
		wk := &bundleWorker{registry: sw.registry, base: c}
		wk.fns = []*bundleFn{newBundleFn(c), newBundleFn(c)}
		w.workers = append(w.workers, wk)
	}
	w.queue = append(w.queue, w.input...)
	return w
}

// simBundle is one bundle about to run: where, and on what.
type simBundle struct {
	wk    *bundleWorker
	inst  int
	elems []simElem
}

// take cuts the next bundle of up to n elements from the queue, leaving out
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
// one at once until it commits.
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
	var mu sync.Mutex
	results := map[int]bundleResult{}
	for i, b := range []simBundle{first, second} {
		if len(b.elems) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := w.run(b, -1, -1, false)
			mu.Lock()
			results[i] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	for i, b := range []simBundle{first, second} {
		if len(b.elems) == 0 {
			continue
		}
		r := results[i]
		w.problems = append(w.problems, r.problems...)
		if r.ok {
			w.commit(r)
		} else {
			w.untilCommitted(b, worker+1)
		}
	}
}

// untilCommitted runs b, with the pending faults on its first try, and
// retries it until it commits: first on the same instance (which drops the
// failed bundle's work at its next StartBundle) unless the runner dropped
// that instance, then on the next worker.
func (w *bundleWorld) untilCommitted(b simBundle, worker int) {
	failAt, crashAt, drop := w.failAt, w.crashAt, w.dropOnFail
	w.failAt, w.crashAt = -1, -1
	if w.dupNext && len(b.elems) > 0 {
		w.dupNext = false
		b.elems = append(b.elems, b.elems[len(b.elems)/2]) // a copy, in the same bundle
	}
	for try := 0; try < 6; try++ {
		r := w.run(b, failAt, crashAt, drop)
		w.problems = append(w.problems, r.problems...)
		if r.ok {
			w.commit(r)
			return
		}
		failAt, crashAt = -1, -1
		if try > 0 || drop {
			worker++
			b.wk = w.workers[worker%len(w.workers)]
		}
	}
	w.violation("a bundle of %d elements never committed", len(b.elems))
}

type bundleResult struct {
	ok       bool
	outputs  []string
	failures []Failure
	problems []string        // violations seen while it ran
	twice    map[string]bool // see bundleWorld.twice
}

func (w *bundleWorld) commit(r bundleResult) {
	w.outputs = append(w.outputs, r.outputs...)
	w.failures = append(w.failures, r.failures...)
	for e := range r.twice {
		w.twice[e] = true
	}
}

// run runs one bundle on b's instance. failAt stops it after that many
// elements without FinishBundle (the runner then drops the instance or
// reuses it); crashAt restarts the worker after that many elements.
func (w *bundleWorld) run(b simBundle, failAt, crashAt int, drop bool) bundleResult {
	f := b.wk.fns[b.inst]
	r := bundleResult{twice: map[string]bool{}}
	emit := func(ts beam.EventTime, z beam.Z) {
		o := z.(string)
		r.outputs = append(r.outputs, o)
		if want := mtime.FromMilliseconds(int64(1000 + indexOfOutput(o))); ts != want {
			r.problems = append(r.problems, fmt.Sprintf("output %s has timestamp %v, want its element's %v", o, ts, want))
		}
	}
	fail := func(_ beam.EventTime, fr Failure) { r.failures = append(r.failures, fr) }
	ctx := context.Background()
	if err := f.StartBundle(ctx, emit, fail); err != nil {
		return r
	}
	for i, e := range b.elems {
		if i == failAt {
			if drop { // the runner replaces the instance; the old one is never called again
				b.wk.fns[b.inst] = newBundleFn(b.wk.base)
				w.clock.Advance(f.staleAfter() + time.Second)
			}
			return r
		}
		if i == crashAt {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			b.wk.registry.Reset(rctx)
			cancel()
		}
		if err := f.ProcessElement(ctx, mtime.FromMilliseconds(int64(1000+e.v)), e.key, e.v, emit, fail); err != nil {
			return r
		}
		// A copy is one element with the first while the first is pending;
		// once the first was emitted (before this call's check, which is
		// the only emitting a deduplicated copy's call does) it is a new
		// element.
		if name := fmt.Sprintf("%s:%d", e.key, e.v); seenBefore(b.elems[:i], e) && (contains(r.outputs, name) || containsFailure(r.failures, name)) {
			r.twice[name] = true
		}
		r.problems = append(r.problems, w.bundleBounds()...)
	}
	if err := f.FinishBundle(ctx, emit, fail); err != nil {
		return r
	}
	r.ok = true
	return r
}

func seenBefore(elems []simElem, e simElem) bool {
	for _, x := range elems {
		if x == e {
			return true
		}
	}
	return false
}

func contains(outputs []string, o string) bool {
	for _, x := range outputs {
		if x == o {
			return true
		}
	}
	return false
}

func containsFailure(fs []Failure, name string) bool {
	for _, f := range fs {
		if f.KeyText+":"+f.ValueText == name {
			return true
		}
	}
	return false
}

// indexOfOutput reads v from an output "key:v".
func indexOfOutput(o string) int {
	var v int
	for i := len(o) - 1; i >= 0; i-- {
		if o[i] == ':' {
			fmt.Sscanf(o[i+1:], "%d", &v)
			break
		}
	}
	return v
}

// bundleBounds checks that no worker holds more than WithMaxItemsHeld.
func (w *bundleWorld) bundleBounds() []string {
	var out []string
	for i, wk := range w.workers {
		for _, p := range wk.registry.Pools() {
			if p.Buffered() > w.s.held || p.Len() > w.s.held {
				out = append(out, fmt.Sprintf("worker %d holds %d tasks (%d with places); held is %d", i, p.Len(), p.Buffered(), w.s.held))
			}
		}
	}
	return out
}

func (w *bundleWorld) apply(a simAction) {
	switch a.Kind {
	case "deliver", "fire":
		w.deliver(1+a.B%5, a.A, a.B)
	case "dup":
		w.dupNext = true
	case "failnext":
		w.failAt, w.dropOnFail = a.B%4, a.A%2 == 0
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
	}
}

// checkBundles is check, but an element that a bundle met again after its
// first copy was emitted is committed twice.
func (w *bundleWorld) checkBundles() {
	seen := w.committed()
	for _, e := range w.input {
		name := fmt.Sprintf("%s:%d", e.key, e.v)
		want := 1
		if w.twice[name] {
			want = 2
		}
		if n := seen[name]; n != want {
			w.violation("element %s committed %d times, want %d", name, n, want)
		}
	}
	if w.s.ordered {
		w.checkOrderOnce()
	}
	w.checkCalls()
}

// checkOrderOnce is checkOrder, leaving out the output of a copy that was a
// new element (its place in the order is the copy's).
func (w *bundleWorld) checkOrderOnce() {
	last, seen := map[string]int{}, map[string]bool{}
	for _, o := range w.outputs {
		if seen[o] {
			continue
		}
		seen[o] = true
		key, v, _ := strings.Cut(o, ":")
		n, _ := strconv.Atoi(v)
		if prev, ok := last[key]; ok && n < prev {
			w.violation("ordered: key %s committed %d after %d", key, n, prev)
		}
		last[key] = n
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
	w.checkBundles()
	for _, wk := range w.workers {
		for _, f := range wk.fns {
			f.Teardown(context.Background())
		}
	}
	w.simWorld.close(baseline)
	return w.problems
}

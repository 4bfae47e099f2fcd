package async

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/stream"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// memState is an in-memory state.Provider for one key: bag state only.
// It counts the writes to each bag, each of which would be a request to the
// runner, and the reads and the bytes they return.
type memState struct {
	mu           sync.Mutex
	bags         map[string][]any
	adds, clears map[string]int
	reads, bytes map[string]int
	// reversed reads each bag last entry first: Beam does not promise the
	// order of a bag, and a runner may give it in any.
	reversed bool
}

func (m *memState) ReadBagState(id string) ([]any, []beamstate.Transaction, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]any(nil), m.bags[id]...)
	if m.reads == nil {
		m.reads, m.bytes = map[string]int{}, map[string]int{}
	}
	m.reads[id]++
	for _, e := range out {
		if b, ok := e.([]byte); ok {
			m.bytes[id] += len(b)
		}
	}
	if m.reversed {
		slices.Reverse(out)
	}
	return out, nil, nil
}
func (m *memState) WriteBagState(t beamstate.Transaction) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bags == nil {
		m.bags = map[string][]any{}
	}
	if m.adds == nil {
		m.adds = map[string]int{}
	}
	m.bags[t.Key] = append(m.bags[t.Key], t.Val)
	m.adds[t.Key]++
	return nil
}
func (m *memState) ClearBagState(t beamstate.Transaction) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.bags, t.Key)
	if m.clears == nil {
		m.clears = map[string]int{}
	}
	m.clears[t.Key]++
	return nil
}

// writes returns the adds and clears of a bag since the last call.
func (m *memState) writes(bag string) (adds, clears int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	adds, clears = m.adds[bag], m.clears[bag]
	delete(m.adds, bag)
	delete(m.clears, bag)
	return adds, clears
}

// readsOf returns the reads of a bag, and the bytes they returned, since
// the last call.
func (m *memState) readsOf(bag string) (reads, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	reads, bytes = m.reads[bag], m.bytes[bag]
	delete(m.reads, bag)
	delete(m.bytes, bag)
	return reads, bytes
}

// size counts the elements the key's bags hold, pending and queued
// (entries may hold several).
func (m *memState) size() int {
	return len(m.envelopes()) + len(m.queued())
}

// summaries counts the entries of the pending bag that hold a queue
// summary.
func (m *memState) summaries() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, raw := range m.bags[stream.PendingStateID] {
		if mustDecode(raw).Summary != nil {
			n++
		}
	}
	return n
}

// filter keeps in the bag only the elements for which keep is true, and
// every queue summary, as another worker's commit would leave it.
func (m *memState) filter(keep func(state.Envelope) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []any
	for _, raw := range m.bags[stream.PendingStateID] {
		entry := mustDecode(raw)
		var kept [][]byte
		for i, env := range entry.Envelopes {
			if keep(env) {
				kept = append(kept, entry.Raws[i])
			}
		}
		switch {
		case entry.Summary != nil && len(kept) > 0:
			out = append(out, state.EncodeWithSummary(kept, *entry.Summary))
		case entry.Summary != nil:
			out = append(out, entry.Summary.Encode())
		case len(kept) > 0:
			out = append(out, state.EncodeBatch(kept))
		}
	}
	m.bags[stream.PendingStateID] = out
}

// envelopes decodes every pending element, in bag order.
func (m *memState) envelopes() []state.Envelope { return m.decode(stream.PendingStateID) }

// queued decodes every queued element, in bag order.
func (m *memState) queued() []state.Envelope { return m.decode(stream.QueuedStateID) }

func (m *memState) decode(bag string) []state.Envelope {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []state.Envelope
	for _, raw := range m.bags[bag] {
		out = append(out, mustDecode(raw).Envelopes...)
	}
	return out
}

// mustDecode decodes a bag entry the transform wrote.
func mustDecode(raw any) state.Entry {
	entry, err := state.DecodeEntry(raw.([]byte))
	if err != nil {
		panic(err)
	}
	return entry
}

var errUnused = fmt.Errorf("memState: not used by the async transform")

func (m *memState) ReadValueState(string) (any, []beamstate.Transaction, error) {
	return nil, nil, errUnused
}
func (m *memState) WriteValueState(beamstate.Transaction) error { return errUnused }
func (m *memState) ClearValueState(beamstate.Transaction) error { return errUnused }
func (m *memState) CreateAccumulatorFn(string) reflectx.Func    { return nil }
func (m *memState) AddInputFn(string) reflectx.Func             { return nil }
func (m *memState) MergeAccumulatorsFn(string) reflectx.Func    { return nil }
func (m *memState) ExtractOutputFn(string) reflectx.Func        { return nil }
func (m *memState) ReadMapStateValue(string, any) (any, []beamstate.Transaction, error) {
	return nil, nil, errUnused
}
func (m *memState) ReadMapStateKeys(string) ([]any, []beamstate.Transaction, error) {
	return nil, nil, errUnused
}
func (m *memState) WriteMapState(beamstate.Transaction) error    { return errUnused }
func (m *memState) ClearMapStateKey(beamstate.Transaction) error { return errUnused }
func (m *memState) ClearMapState(beamstate.Transaction) error    { return errUnused }
func (m *memState) ReadOrderedListState(string) ([]any, []beamstate.Transaction, error) {
	return nil, nil, errUnused
}
func (m *memState) WriteOrderedListState(beamstate.Transaction) error { return errUnused }
func (m *memState) ClearOrderedListState(beamstate.Transaction) error { return errUnused }

// memTimers records the timers set for one key; the last set wins.
type memTimers struct {
	mu   sync.Mutex
	last *beamtimers.TimerMap
}

func (m *memTimers) Set(t beamtimers.TimerMap) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = &t
}

// lastSet is the last timer set (or cleared), without taking it.
func (m *memTimers) lastSet() (beamtimers.TimerMap, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		return beamtimers.TimerMap{}, false
	}
	return *m.last, true
}

// forget drops the last timer set, as if none had been.
func (m *memTimers) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = nil
}

// pending returns the fire time of the set timer and clears it, or false.
func (m *memTimers) take() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		return time.Time{}, false
	}
	t := m.last.FireTimestamp.ToTime()
	m.last = nil
	return t, true
}

// gated is a wrapped DoFn whose calls block until the test opens their gate.
// Calls and gates live in package variables keyed by Name, because the
// transform rebuilds the fn from JSON in Setup.
type gated struct {
	Name string
	// Outputs per call from ProcessElement; FinishBundle adds one more when Finish is set.
	Outputs int
	Finish  bool
}

type gateBook struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
	calls map[string]int
	fail  map[string]error
	panic map[string]any
	// plan lists per element the error of each successive attempt (nil:
	// success); seen records "attempt/fallback" of each call.
	plan map[string][]error
	seen map[string][]string
}

var book = &gateBook{gates: map[string]chan struct{}{}, calls: map[string]int{}, fail: map[string]error{}, panic: map[string]any{},
	plan: map[string][]error{}, seen: map[string][]string{}}

func (b *gateBook) attempts(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen[id]...)
}

// testName is t's name, with a run number after the first run of that
// name in this process (-count=N), so that the gates, events and starts a
// test books under its name start afresh at each run. It is the same for
// every call in one run.
func testName(t testing.TB) string {
	testNames.Lock()
	defer testNames.Unlock()
	if n, ok := testNames.of[t]; ok {
		return n
	}
	if testNames.of == nil {
		testNames.of, testNames.runs = map[testing.TB]string{}, map[string]int{}
	}
	n := t.Name()
	if r := testNames.runs[n]; r > 0 {
		n = fmt.Sprintf("%s~%d", n, r)
	}
	testNames.runs[t.Name()]++
	testNames.of[t] = n
	return n
}

var testNames struct {
	sync.Mutex
	of   map[testing.TB]string
	runs map[string]int
}

func gateID(name string, key any, v int) string { return fmt.Sprintf("%s/%v/%d", name, key, v) }

func (b *gateBook) gate(id string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	g, ok := b.gates[id]
	if !ok {
		g = make(chan struct{})
		b.gates[id] = g
	}
	return g
}

func (b *gateBook) open(id string) { close(b.gate(id)) }

// planErrors makes the attempts of gate id fail with errs, in order.
func (b *gateBook) planErrors(id string, errs ...error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.plan[id] = errs
}

func (b *gateBook) count(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[id]
}

func (f *gated) run(ctx context.Context, key any, v int, emit func(string)) error {
	id := gateID(f.Name, key, v)
	book.mu.Lock()
	book.calls[id]++
	fail, p := book.fail[id], book.panic[id]
	delete(book.fail, id)
	if plan := book.plan[id]; len(plan) > 0 {
		fail, book.plan[id] = plan[0], plan[1:]
	}
	fb, _ := Fallback(ctx)
	book.seen[id] = append(book.seen[id], fmt.Sprintf("%d/%s", Attempt(ctx), fb))
	book.mu.Unlock()
	select {
	case <-book.gate(id):
	case <-ctx.Done():
		return ctx.Err()
	}
	if p != nil {
		panic(p)
	}
	if fail != nil {
		return fail
	}
	for i := 0; i < max(f.Outputs, 1); i++ {
		emit(fmt.Sprintf("%v:%d#%d", key, v, i))
	}
	return nil
}

func (f *gated) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	return f.run(ctx, key, v, emit)
}

func (f *gated) FinishBundle(emit func(string)) {
	if f.Finish {
		emit("finish")
	}
}

// reverting is gated with a compensation method that counts its calls and
// panics when Panic is set.
type reverting struct {
	gated
	Panic bool
}

func (f *reverting) Revert(ctx context.Context, key string, v int, err error) error {
	var fe *FailureError
	if !errors.As(err, &fe) || fe.KeyText != key {
		return fmt.Errorf("Revert got error %v, want the element's *FailureError", err)
	}
	book.mu.Lock()
	book.calls["revert/"+gateID(f.Name, key, v)]++
	book.mu.Unlock()
	if f.Panic {
		panic("revert exploded")
	}
	return nil
}

// gatedInt and gatedStruct take other key types.
type gatedInt struct{ gated }

func (f *gatedInt) ProcessElement(ctx context.Context, key int, v int, emit func(string)) error {
	return f.run(ctx, key, v, emit)
}

type point struct{ X, Y int }

type gatedStruct struct{ gated }

func (f *gatedStruct) ProcessElement(ctx context.Context, key point, v int, emit func(string)) error {
	return f.run(ctx, key, v, emit)
}

// parity is an ID function: elements with values of equal parity are one.
func parity(v int) string { return fmt.Sprint(v % 2) }

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&gated{})
	register.DoFn4x1[context.Context, int, int, func(string), error](&gatedInt{})
	register.DoFn4x1[context.Context, string, int, func(string), error](&reverting{})
	register.DoFn4x1[context.Context, point, int, func(string), error](&gatedStruct{})
	register.Function1x1(parity)
	beam.RegisterType(reflect.TypeOf(point{}))
}

// harness drives one transform's DoFns directly, with per-key in-memory
// state and timers and a manual clock.
type harness struct {
	t      testing.TB
	c      worker.Core
	clock  *timers.Manual
	states map[any]*memState
	timers map[any]*memTimers
	// failures is whether the transform has a failure output; failed
	// collects what the callbacks wrote to it.
	failures bool
	failed   []Failure
	// early holds, per key, what ProcessElement committed since the key's
	// last fire or drain: they are returned with it.
	early map[any][]string
	// stamps records the timestamp of every output, by output.
	stamps map[string]beam.EventTime
}

func newHarness(t testing.TB, fn any, keyT reflect.Type, opts ...Option) *harness {
	t.Helper()
	return newHarnessFailures(t, false, fn, keyT, opts...)
}

// newHarnessFailures is newHarness with or without a failure output.
func newHarnessFailures(t testing.TB, failures bool, fn any, keyT reflect.Type, opts ...Option) *harness {
	t.Helper()
	set, err := resolve(opts)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	spec, _, err := wrapped.Inspect(fn, keyT, reflect.TypeOf(0))
	if err != nil {
		t.Fatalf("inspectFn: %v", err)
	}
	h := &harness{t: t, clock: timers.NewManual(time.Unix(1_800_000_000, 0)), states: map[any]*memState{}, timers: map[any]*memTimers{}, failures: failures,
		early: map[any][]string{}, stamps: map[string]beam.EventTime{}}
	var cfg terms.Config
	if cfg, err = newConfig("test", spec, keyT, reflect.TypeOf(0), set, failures); err != nil {
		t.Fatalf("newConfig: %v", err)
	}
	h.c = worker.Core{Config: cfg}
	h.c.SetClock(h.clock)
	if err := h.c.Setup(context.Background()); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() {
		h.c.Teardown(context.Background())
		if p, err := h.c.Pool(); err == nil {
			p.Close(context.Background())
		}
	})
	return h
}

func (h *harness) stream() *streamFn { return newStreamFn(h.c) }

func (h *harness) st(key any) *memState {
	if h.states[key] == nil {
		h.states[key] = &memState{}
	}
	return h.states[key]
}

func (h *harness) tm(key any) *memTimers {
	if h.timers[key] == nil {
		h.timers[key] = &memTimers{}
	}
	return h.timers[key]
}

// process feeds one element to f, in a bundle of its own, at the clock's
// time. What its commit emits is kept for the key's next fire. A bundle of
// the transform has ended just before, at once on the manual clock and
// with no timer in force, so the element's timer is planned as the
// runner's pace says, not with timers.Cadence.FirstLead
// (TestFirstBundleTimer).
func (h *harness) process(f *streamFn, key any, v int) {
	h.t.Helper()
	ts := mtime.FromTime(h.clock.Now())
	if p, err := h.c.Pool(); err == nil {
		p.Pace().BundleEnded(h.clock.Now(), h.clock.Now(), nil, time.Minute)
	}
	f.StartBundle(context.Background(), nil, nil, nil)
	if err := f.ProcessElement(context.Background(), ts, h.st(key), h.tm(key), key, v, h.emitter(key), h.fail, nil); err != nil {
		h.t.Fatalf("ProcessElement(%v, %d): %v", key, v, err)
	}
}

// emitter collects a key's outputs into early, with their timestamps.
func (h *harness) emitter(key any) func(beam.EventTime, beam.Z) {
	return func(ts beam.EventTime, z beam.Z) {
		h.early[key] = append(h.early[key], z.(string))
		h.stamps[z.(string)] = ts
	}
}

// fire runs the key's commit callback, in a bundle of its own, and returns
// what it emitted, after what ProcessElement committed since the last fire.
func (h *harness) fire(f *streamFn, key any) ([]string, error) {
	f.StartBundle(context.Background(), nil, nil, nil)
	err := f.OnTimer(context.Background(), h.st(key), h.tm(key), key, beamtimers.Context{Family: f.Commit.Family}, h.emitter(key), h.fail, nil)
	out := h.early[key]
	delete(h.early, key)
	return out, err
}

func (h *harness) fail(_ beam.EventTime, fr Failure) { h.failed = append(h.failed, fr) }

// revert runs the step after the transform that compensates committed
// failures (revertFn) on one failure record, and returns what it passes on.
func (h *harness) revert(fr Failure) Failure {
	h.t.Helper()
	f := &revertFn{User: h.c.User, KeyType: h.c.KeyType, ValueType: h.c.ValueType}
	if err := f.Setup(context.Background()); err != nil {
		h.t.Fatalf("revertFn.Setup: %v", err)
	}
	defer f.Teardown(context.Background())
	var out []Failure
	if err := f.ProcessElement(context.Background(), fr, func(o Failure) { out = append(out, o) }); err != nil {
		h.t.Fatalf("revertFn: %v", err)
	}
	if len(out) != 1 {
		h.t.Fatalf("revertFn passed on %d records, want 1", len(out))
	}
	return out[0]
}

// owner is the pool owner of a key: the key, encoded.
func (h *harness) owner(key any) string {
	kb, _ := h.c.EncodeKey(key)
	return string(kb)
}

// waitKey waits until every local task of key has finished.
func (h *harness) waitKey(key any) {
	h.t.Helper()
	p, _ := h.c.Pool()
	for _, t := range p.ForOwner(h.owner(key)) {
		select {
		case <-t.Done():
		case <-time.After(10 * time.Second):
			h.t.Fatalf("a task of key %v did not finish", key)
		}
	}
}

// pendingOf returns the pending elements of key whose value is v, from its
// bag state.
func (h *harness) pendingOf(key any, v int) []state.Envelope {
	var out []state.Envelope
	for _, env := range h.st(key).envelopes() {
		if got, err := h.c.DecodeValue(nil, env.Value); err == nil && got == v {
			out = append(out, env)
		}
	}
	return out
}

// dropValue removes the elements of key whose value is v from its bag
// state, as another worker's commit of them would.
func (h *harness) dropValue(key any, v int) {
	h.st(key).filter(func(env state.Envelope) bool {
		got, err := h.c.DecodeValue(nil, env.Value)
		return err != nil || got != v
	})
}

// waitFinished waits until the pool's tasks for the pending elements (key,
// v) have finished.
func (h *harness) waitFinished(key any, v int) {
	h.t.Helper()
	p, _ := h.c.Pool()
	envs := h.pendingOf(key, v)
	if len(envs) == 0 {
		h.t.Fatalf("element (%v, %d) is not pending", key, v)
	}
	for _, env := range envs {
		t := p.Lookup(state.TaskKey{Owner: h.owner(key), Element: env.Element(h.owner(key))})
		if t == nil {
			h.t.Fatalf("element (%v, %d) is not known to the pool", key, v)
		}
		select {
		case <-t.Done():
		case <-time.After(10 * time.Second):
			h.t.Fatalf("element (%v, %d) did not finish", key, v)
		}
	}
}

// waitRunning waits until the pool's task for the pending element (key, v)
// is calling its fn.
func (h *harness) waitRunning(key any, v int) {
	h.t.Helper()
	p, _ := h.c.Pool()
	envs := h.pendingOf(key, v)
	if len(envs) != 1 {
		h.t.Fatalf("element (%v, %d) is pending %d times, want once", key, v, len(envs))
	}
	t := p.Lookup(state.TaskKey{Owner: h.owner(key), Element: envs[0].Element(h.owner(key))})
	if t == nil {
		h.t.Fatalf("element (%v, %d) is not known to the pool", key, v)
	}
	for deadline := time.Now().Add(10 * time.Second); t.Status() != state.Running; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatalf("element (%v, %d) did not start its call", key, v)
		}
	}
}

func (h *harness) bundleFn() *bundleFn { return newBundleFn(h.c) }

// bundleElem is one element of a bundle of bounded input.
type bundleElem struct {
	key any
	v   int
	ts  beam.EventTime
}

// bundleOut is what one bundle emitted: outputs with their timestamps, and
// failure records.
type bundleOut struct {
	outputs  []string
	stamps   map[string]beam.EventTime
	failures []Failure
}

// runBundle runs one bundle of f over elems, as a runner would: StartBundle,
// ProcessElement for each element in order, FinishBundle.
func (h *harness) runBundle(f *bundleFn, elems []bundleElem) (bundleOut, error) {
	h.t.Helper()
	out := bundleOut{stamps: map[string]beam.EventTime{}}
	emit := func(ts beam.EventTime, z beam.Z) {
		out.outputs = append(out.outputs, z.(string))
		out.stamps[z.(string)] = ts
	}
	fail := func(_ beam.EventTime, fr Failure) { out.failures = append(out.failures, fr) }
	ctx := context.Background()
	if err := f.StartBundle(ctx, emit, fail); err != nil {
		return out, err
	}
	for _, e := range elems {
		if err := f.ProcessElement(ctx, e.ts, e.key, e.v, emit, fail); err != nil {
			return out, err
		}
	}
	return out, f.FinishBundle(ctx, emit, fail)
}

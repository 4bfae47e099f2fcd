package worker

// The transform's per-process object: what every DoFn instance of one
// transform shares in a worker process, beside the pool.

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// worker is one transform's shared object in one worker process: its event
// and batch counts, its listeners' hub and its result cache. The state
// registry holds it under the transform's ID, beside the pool (which owns
// the guard as its gate), and closes it on Reset or when the transform goes
// idle. The hub and the cache are built on first use, each on its own: one
// that cannot be built is tried again at its next use and keeps the other
// from nothing.
type worker struct {
	counts *eventCounts
	batch  *batchStats

	hub   atomic.Pointer[Hub]         // nil until built, or without listeners
	cache atomic.Pointer[resultCache] // nil until built, or without WithCache

	mu     sync.Mutex // builds hub and cache; guards closed
	closed bool
}

// errWorkerClosed is the error of a part asked for after a Reset closed
// the object (an instance that looked it up before the Reset).
var errWorkerClosed = errors.New("async: the transform's per-process object was closed (a worker reset)")

func newWorker() *worker {
	return &worker{
		counts: &eventCounts{ledger: ledger.New(len(eventTally{}.vector()))},
		batch:  &batchStats{published: ledger.New(2)},
	}
}

// buildOnce returns *part, building it under w.mu when it is not built yet;
// a build that fails keeps nothing, and the next use tries again.
func buildOnce[T any](w *worker, part *atomic.Pointer[T], build func() (*T, error)) (*T, error) {
	if p := part.Load(); p != nil {
		return p, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errWorkerClosed
	}
	if p := part.Load(); p != nil {
		return p, nil
	}
	p, err := build()
	if err != nil {
		return nil, err
	}
	part.Store(p)
	return p, nil
}

// Close closes the listeners and the connection to Redis, if they were
// built; neither is built after it.
func (w *worker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	var errs []error
	if h := w.hub.Load(); h != nil {
		errs = append(errs, h.Close())
	}
	if c := w.cache.Load(); c != nil {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

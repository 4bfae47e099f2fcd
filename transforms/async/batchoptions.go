package async

// The batch options of BatchParDo and BatchEnrich, their check, and the
// batch terms shipped to workers.

import (
	"errors"
	"fmt"
	"time"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// DefaultBatchSize is BatchParDo's batch size when WithBatchSize is not
// given.
const DefaultBatchSize = 50

// batched marks the settings of a BatchParDo (always its first option).
func batched(s *settings) { s.batch.on = true }

// WithBatchSize sets the most elements in one call of a BatchParDo's fn
// (BatchEnrich: keys in one call of its lookup).
// Must be > 0. Default: DefaultBatchSize (50).
func WithBatchSize(n int) Option {
	return func(s *settings) {
		s.batch.given = append(s.batch.given, fmt.Sprintf("WithBatchSize(%d)", n))
		if n <= 0 {
			s.errs = append(s.errs, fmt.Errorf("WithBatchSize(%d): the batch size must be > 0", n))
			return
		}
		s.batch.size = n
	}
}

// WithBatchWait sets how long a batch (of BatchParDo or BatchEnrich) that
// is not full waits for more elements after its first, before it asks for a call slot. Whatever the
// wait, a batch goes on gathering until it has a slot: at capacity batches
// fill without any wait. Default: 0 (no added latency); set it when the
// service is cheaper per element in full batches than it is slow.
func WithBatchWait(d time.Duration) Option {
	return func(s *settings) {
		s.batch.given = append(s.batch.given, fmt.Sprintf("WithBatchWait(%v)", d))
		if d < 0 {
			s.errs = append(s.errs, fmt.Errorf("WithBatchWait(%v): the wait must be >= 0", d))
			return
		}
		s.batch.wait = d
	}
}

// WithBatchPerKey makes each call of a BatchParDo's fn take the elements of
// one key only (and, off the global window, of one window), for services
// that want a key's items together. Default: batches mix keys.
func WithBatchPerKey() Option {
	return func(s *settings) {
		s.batch.given = append(s.batch.given, "WithBatchPerKey()")
		s.batch.perKey = true
	}
}

// resolveBatch checks the batch options and sizes the buffers for batches:
// Parallelism requests of Size elements in flight, as many gathering; and
// the held bound by async.ParDo's rule (64 × the elements in flight at
// once), so that it does not cap unbounded throughput below the batches'
// limit for requests of 16 ms or more.
func (s *settings) resolveBatch() {
	b := &s.batch
	if !b.on {
		if len(b.given) > 0 {
			s.errs = append(s.errs, fmt.Errorf("%s: batch options apply to async.BatchParDo and async.BatchEnrich, whose fn takes many elements per call; async.ParDo and async.Enrich call per element", b.given[0]))
		}
		return
	}
	if b.size == 0 {
		b.size = DefaultBatchSize
	}
	if len(s.fallbacks) > 0 {
		s.errs = append(s.errs, errors.New("WithFallbacks does not apply to async.BatchParDo or async.BatchEnrich: the elements of one request are at different attempts; read the attempt per element from your own state, or use async.ParDo or async.Enrich"))
	}
	if s.buffer == 0 {
		s.buffer = max(2*s.parallelism*b.size, 10)
	}
	if s.held == 0 {
		s.held = max(64*s.parallelism*b.size, s.buffer)
	}
}

func newBatchSpec(b batchSettings) *terms.BatchSpec {
	if !b.on {
		return nil
	}
	return &terms.BatchSpec{Size: b.size, Wait: b.wait, PerKey: b.perKey}
}

package async

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/bounded"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// bundleFn is the DoFn of bounded input, as the job graph names it: the
// shipped core. Its callbacks are the bounded path's (bounded.Path).
//
// It is stateless, so runners neither group its input by key nor shuffle
// it; keyedBundleFn is the variant for WithOrdered and WithIDFn.
type bundleFn struct {
	worker.Core
	bounded *bounded.Path // made at the first callback
}

// keyedBundleFn is bundleFn for WithOrdered and WithIDFn: it declares a bag
// it never uses, which makes runners treat it as stateful and hand each
// key's elements, in one sequence, to one bundle at a time (Dataflow groups
// them by key), so the order of a key is the order of one bundle, and copies
// of one element pending at once meet in one bundle.
type keyedBundleFn struct {
	bundleFn
	// Group is declared, never read or written.
	Group beamstate.Bag[[]byte]
}

// newBundleFn makes the DoFn; a bundle has no later callback to write a
// retry back to, so retries wait in the worker.
func newBundleFn(c worker.Core) *bundleFn {
	c.RetryInWorker = true
	return &bundleFn{Core: c}
}

func newKeyedBundleFn(c worker.Core) *keyedBundleFn {
	return &keyedBundleFn{bundleFn: *newBundleFn(c), Group: beamstate.MakeBagState[[]byte]("asyncGroup")}
}

// path is the bounded path that runs f's callbacks.
func (f *bundleFn) path() *bounded.Path {
	if f.bounded == nil {
		f.bounded = bounded.New(&f.Core)
	}
	return f.bounded
}

// StartBundle begins a bundle of the path.
func (f *bundleFn) StartBundle(ctx context.Context, _ func(beam.EventTime, beam.Z), _ func(beam.EventTime, Failure)) error {
	return f.path().StartBundle(ctx)
}

// ProcessElement starts one element, emitting what has finished.
func (f *bundleFn) ProcessElement(ctx context.Context, ts beam.EventTime, key beam.X, value beam.Y, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.path().ProcessElement(ctx, ts, key, value, emit, fail)
}

// FinishBundle waits for every element of the bundle and emits the rest.
func (f *bundleFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.path().FinishBundle(ctx, emit, fail)
}

// ProcessElement of keyedBundleFn is bundleFn's; the state provider is unused.
func (f *keyedBundleFn) ProcessElement(ctx context.Context, ts beam.EventTime, _ beamstate.Provider, key beam.X, value beam.Y, emit func(beam.EventTime, beam.Z), fail func(beam.EventTime, Failure)) error {
	return f.bundleFn.ProcessElement(ctx, ts, key, value, emit, fail)
}

package async

// Registration with Beam of the DoFns, emitters and types the transform
// uses, so that a worker process can rebuild them; and of the hooks the
// machinery and runner/portable call back.

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamstate "github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	beamtimers "github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/runner/portable"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/stream"
)

// The package registers its own DoFn, so a worker that is a separate process
// can rebuild it. Users register only their wrapped fn (see TryParDo).
func init() {
	register.DoFn9x1[context.Context, beam.EventTime, beamstate.Provider, beamtimers.Provider, beam.X, beam.Y, func(beam.EventTime, beam.Z), func(beam.EventTime, Failure), stream.EscrowEmit, error](&streamFn{})
	register.DoFn7x1[context.Context, beamstate.Provider, beamtimers.Provider, beam.X, []byte, func(beam.EventTime, beam.Z), func(beam.EventTime, Failure), error](&escrowFn{})
	register.DoFn6x1[context.Context, beam.EventTime, beam.X, beam.Y, func(beam.EventTime, beam.Z), func(beam.EventTime, Failure), error](&bundleFn{})
	register.DoFn7x1[context.Context, beam.EventTime, beamstate.Provider, beam.X, beam.Y, func(beam.EventTime, beam.Z), func(beam.EventTime, Failure), error](&keyedBundleFn{})
	register.DoFn3x1[context.Context, Failure, func(Failure), error](&revertFn{})
	register.DoFn6x1[beam.Window, beam.EventTime, beam.X, beam.Y, func(beam.X, windowed), func(Failure), error](&carryFn{})
	register.DoFn3x1[beam.Window, windowed, func(beam.Z), error](&restoreFn{})
	register.DoFn3x0[beam.Window, Failure, func(Failure)](&restoreFailureFn{})
	register.DoFn2x1[kvOutput, func(beam.X, beam.Y), error](&splitPairsFn{})
	register.Emitter2[beam.X, beam.Y]()
	register.Emitter2[beam.X, windowed]()
	register.Emitter1[beam.Z]()
	register.Emitter1[Failure]()
	register.Emitter2[beam.EventTime, beam.Z]()
	register.Emitter2[beam.EventTime, Failure]()
	register.Emitter3[beam.EventTime, beam.X, []byte]()
	beam.RegisterType(reflect.TypeOf(Failure{}))
	beam.RegisterType(reflect.TypeOf(windowed{}))
	beam.RegisterType(kvOutputType)
	beam.RegisterType(reflect.TypeOf(LogListener{}))
	beam.RegisterType(reflect.TypeOf(JSONLinesListener{}))
	beam.RegisterType(reflect.TypeOf(TimingListener{}))
	registerPairOutput()
	registerCarry()
	portable.AddEdit(editJob)
}

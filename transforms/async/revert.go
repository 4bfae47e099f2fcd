package async

// Compensation: the wrapped DoFn's Revert method runs in a step of its own,
// over failure records that a bundle has committed.

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// revertFn calls the wrapped DoFn's Revert method for each failure record
// and passes the record on, with CompensationError set when Revert failed
// or panicked. It runs downstream of the transform, behind a reshuffle
// (revertStep; on Flink with stable input too: RequireStableInput), on
// records the runner has committed: an element's failure is final there (a
// callback that failed and was retried may yet see it succeed, so Revert
// cannot run inside the callback that writes the record, nor in a step
// fused into its bundle). A bundle of this step that fails is retried,
// so Revert runs at least once per failure record.
type revertFn struct {
	User      wrapped.Spec
	KeyType   beam.EncodedType
	ValueType beam.EncodedType

	user           *wrapped.Fn
	keyDec, valDec beam.ElementDecoder
}

// Setup rebuilds the wrapped fn and forwards its Setup.
func (f *revertFn) Setup(ctx context.Context) error {
	u, err := wrapped.Start(ctx, f.User)
	if err != nil {
		return err
	}
	f.user = u
	f.keyDec = beam.NewElementDecoder(f.KeyType.T)
	f.valDec = beam.NewElementDecoder(f.ValueType.T)
	return nil
}

// ProcessElement reverts one failed element and passes its record on.
func (f *revertFn) ProcessElement(ctx context.Context, fr Failure, emit func(Failure)) error {
	key, err := wrapped.Decode(f.keyDec, fr.Key)
	if err != nil {
		return fmt.Errorf("async: decoding the key of failure record %s: %w", fr.ElementID, err)
	}
	value, err := wrapped.Decode(f.valDec, fr.Value)
	if err != nil {
		return fmt.Errorf("async: decoding the value of failure record %s: %w", fr.ElementID, err)
	}
	if cerr := f.user.Revert(ctx, key, value, &FailureError{Failure: fr}); cerr != nil {
		fr.CompensationError = cerr.Error()
	}
	emit(fr)
	return nil
}

// Teardown forwards Teardown to the wrapped fn.
func (f *revertFn) Teardown(ctx context.Context) error {
	if f.user == nil {
		return nil
	}
	return f.user.Close(ctx)
}

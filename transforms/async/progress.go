package async

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// ReportProgress lets a long call of the wrapped fn report how far it has
// got: fraction from 0 to 1 and optional details, using the context the
// transform gave the fn. The report reaches the transform's listener as an
// EventProgress at once; the latest report of each running call is published
// as the distribution MetricProgress (in per mille) by its key's callbacks
// while it runs, and each report is counted in MetricProgressReports.
//
// It returns an error, and reports nothing, when ctx is not from a call of
// an async transform or fraction is outside [0, 1] (or NaN).
func ReportProgress(ctx context.Context, fraction float64, details string) error {
	info, ok := ctx.Value(worker.CallKey{}).(worker.CallInfo)
	if !ok {
		return errors.New("async.ReportProgress: ctx is not the context of a call made by an async transform; pass the ctx your ProcessElement received")
	}
	if math.IsNaN(fraction) || fraction < 0 || fraction > 1 {
		return fmt.Errorf("async.ReportProgress: fraction %v is outside [0, 1]", fraction)
	}
	if t := state.TaskFromContext(ctx); t != nil {
		t.SetProgress(fraction)
	}
	info.F.Event(EventProgress, info.Key, info.ID, info.Attempt, func(e *Event) {
		e.Progress, e.Details = fraction, details
	})
	return nil
}

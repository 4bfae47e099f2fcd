// Package terms holds what the async front and its machinery both speak:
// the transform's configuration as ParDo decided it and Beam ships it to
// workers (Config and its parts), and the types users meet in outputs,
// events and metrics (Failure, Event, the failure kinds, the metric names).
// The front re-declares the public ones as aliases, so that they are the
// same types under the names users know (async.Failure is terms.Failure).
//
// It needs no DoFn and no pool: it sits under every other package of the
// transform.
package terms

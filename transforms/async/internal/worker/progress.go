package worker

// What the context of a call carries for ReportProgress.

// CallKey carries, in the context given to the wrapped fn, what
// ReportProgress needs to know about the call.
type CallKey struct{}

// CallInfo is the call CallKey names: the transform's DoFn instance, and
// the element and attempt being called.
type CallInfo struct {
	F       *Core
	Key     any
	ID      string
	Attempt int
}

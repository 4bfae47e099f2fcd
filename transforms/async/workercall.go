package async

// What the context of a call carries for ReportProgress.

// callKey carries, in the context given to the wrapped fn, what
// ReportProgress needs to know about the call.
type callKey struct{}

type callInfo struct {
	f       *core
	key     any
	id      string
	attempt int
}

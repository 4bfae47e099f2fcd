// Package wrapped is the function an async transform wraps: the user's
// DoFn struct or top-level function, its Enrich lookup and join, or its
// batch form.
//
// At pipeline construction it checks a fn's shape against the input's key
// and value types (Inspect, InspectBatch, InspectEnrich), checks that what
// a worker must find by name is registered with Beam, and describes the fn
// as a Spec that ships to workers inside the DoFn. On a worker, Start
// rebuilds the fn from its Spec and runs its Setup; Fn.Call runs one
// element (StartBundle, ProcessElement, FinishBundle) on any goroutine,
// Fn.CallBatch one request of a batch fn, Fn.Revert its compensation. A
// panic in the user's code becomes an error with its stack. Fn.Close runs
// Teardown once the last call has returned.
//
// It knows nothing of bag state, timers or the pool.
package wrapped

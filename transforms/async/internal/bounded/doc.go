// Package bounded is the bounded path of transforms/async: the callbacks
// of its DoFn over bounded input (bundleFn in the front, which the job
// graph names).
//
// On bounded input the bundle is the unit of commit and retry: a runner
// commits a bundle's outputs with the consumption of its input and retries
// a failed bundle whole. So the bundle that accepts an element emits its
// outputs, and nothing is written to state: ProcessElement starts the
// element on the transform's pool and emits what has finished since, and
// FinishBundle waits for the rest.
//
// One element reads in this order:
//   - bundle.go: the DoFn's callbacks, and the flush that emits finished
//     calls.
//   - bundledrain.go: what a bundle of the end-of-input drain does.
//   - bundlerun.go: Path, and bundleRun, one bundle's elements and the
//     order in which they are decided.
package bounded

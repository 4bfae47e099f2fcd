package async

// WithOrdered commits the results of each key in the order its elements were
// accepted (Flink's ordered mode, Parallel Consumer's KEY ordering): a
// finished element waits until every earlier element of its key has been
// committed or has failed for good. Calls still run in parallel; only their
// commits wait. The order survives worker restarts and moved keys: each
// element's place is kept with it in bag state.
//
// The cost is latency and memory: one slow or retrying element holds back
// its key's later results (a failed attempt waiting for its backoff holds
// them for that long), and the held results keep their places (see
// WithMaxItemsHeld). So that a key can never be stuck behind a full worker,
// its earliest pending element is started even without a place (one extra
// element per key, also after a failed callback of the key: if the retried
// callback must start the earliest element without a place again, the call
// the failed one had started that way for the next element is cancelled,
// and made again in its turn). Failure records are not held back: they go to the failure output
// as soon as an element fails for good.
//
// With bounded input each key's results are emitted in the order of its
// bundle (runners give one bundle a key's elements in sequence: this
// transform then declares state, so that they group the input by key). A
// failed bundle is retried whole. Default: unordered.
func WithOrdered() Option {
	return func(s *settings) { s.ordered = true }
}

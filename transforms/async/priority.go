package async

// WithPriority sets a function from an element's value to its priority, a
// registered top-level function func(V) int. When elements wait to start, higher
// priorities start first and equal priorities keep their arrival order
// (TaskFlow's atom priority). It orders:
//   - admitted elements waiting in the worker for a place in flight (see
//     WithMaxItemsToBuffer) or for a parallelism slot, across all keys,
//     bundles and DoFn instances of the transform in the worker process (an
//     element already in flight keeps its place, so at most buffer minus
//     parallelism elements can start before a later, higher one);
//   - the elements a key's callback starts from bag state (left there for
//     want of room, restarted after a worker restart, retries that are due).
//
// Elements left in bag state for want of room (WithMaxItemsHeld) are started
// by their own key's callback, so across keys they start as those callbacks
// fire, not by priority. With WithOrdered, a key's callback starts its
// elements in acceptance order instead. Default: all priorities 0, first
// come first served.
func WithPriority(fn any) Option {
	return func(s *settings) { s.priorityFn = fn }
}

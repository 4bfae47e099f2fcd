package bounded

// What a bundle does for the end-of-input drain (package drain), whose
// DoFn runs the elements the stream left: it tells
// the stream's calls that finished with success (Adopt takes those), and
// takes the places of the calls that will never be committed.

import (
	"context"

	"github.com/asyncbeam/asyncbeam/state"
)

// Succeeded reports whether t finished with its element's outputs.
func Succeeded(t *state.Task) bool {
	if t.Status() != state.Finished || t.Interrupted() {
		return false
	}
	_, err := t.Result()
	return err == nil
}

// streamTask reports whether t is a call of the unbounded path: its owner
// is its element's key (internal/stream), where a bundle's calls are owned by
// the bundle.
func streamTask(t *state.Task) bool { return t.Key.Owner == t.Key.Element.Key }

// reclaim makes room for an element of a drain (run.endOfInput) when the
// pool has none. At the end of input no key of the stream is called back:
// its calls still held will never be committed, and its keys' waits for
// room will never take a place. So the waits end, and the stream's calls
// not finished with success go; its finished results, which their keys'
// drains adopt, go one at a time and only when nothing of this bundle is
// left to free a place.
func (f *Path) reclaim(ctx context.Context, run *bundleRun) {
	if run.pool.HasRoom(run.id) {
		return
	}
	evicted := run.pool.Reclaim(func(t *state.Task) bool { return streamTask(t) && !Succeeded(t) }, 0)
	if !run.pool.HasRoom(run.id) && !run.holdsPlaces() {
		evicted = append(evicted, run.pool.Reclaim(streamTask, 1)...)
	}
	f.ReportEvicted(ctx, evicted)
}

// EndOfInput marks the bundle as a drain's (see reclaim), and returns its
// pool.
func (f *Path) EndOfInput() *state.Pool {
	f.run.endOfInput = true
	return f.run.pool
}

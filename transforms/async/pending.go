package async

import (
	"context"
	"fmt"

	"github.com/asyncbeam/asyncbeam/state"
)

// pending is one bag-state entry: its raw bytes (re-added unchanged when it
// stays) and their decoded form.
type pending struct {
	raw []byte
	env state.Envelope
}

// readPending reads the key's bag state, keeping the first entry of each ID.
// dropped reports whether duplicate entries were left out; they are counted
// as deduplicated.
func (f *core) readPending(ctx context.Context, ks keyState, key any) (entries []pending, dropped bool, err error) {
	raws, _, err := ks.bag.Read(ks.sp)
	if err != nil {
		return nil, false, fmt.Errorf("async: reading bag state: %w", err)
	}
	seen := make(map[string]bool, len(raws))
	for _, raw := range raws {
		env, err := state.DecodeEnvelope(raw)
		if err != nil {
			return nil, false, fmt.Errorf("async: bag state %q holds an entry this version cannot read: %w", pendingStateID, err)
		}
		if seen[env.ID] {
			dropped = true
			f.metrics.deduplicated.Inc(ctx, 1)
			f.event(EventDeduplicated, key, env.ID, 0, nil)
			continue
		}
		seen[env.ID] = true
		entries = append(entries, pending{raw: raw, env: env})
	}
	return entries, dropped, nil
}

// cancelStale removes the key's local tasks whose element is no longer in bag
// state: they were committed elsewhere (a key that moved between workers, or
// a retried bundle), and running them on would only waste a slot.
func (f *core) cancelStale(ctx context.Context, pool *state.Pool, key any, kb string, entries []pending) {
	pool.Touch(kb)
	local := pool.ForOwner(kb)
	if len(local) == 0 {
		return
	}
	in := make(map[string]bool, len(entries))
	for _, e := range entries {
		in[e.env.ID] = true
	}
	for _, t := range local {
		if !in[t.Key.ID] {
			pool.Remove(t)
			f.metrics.cancelled.Inc(ctx, 1)
			f.event(EventCancelled, key, t.Key.ID, t.Attempts(), nil)
		}
	}
}

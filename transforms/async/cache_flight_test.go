package async

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// hookClock is a fixed clock whose next Now runs a hook first.
type hookClock struct {
	mu   sync.Mutex
	now  time.Time
	hook func()
}

func (c *hookClock) Now() time.Time {
	c.mu.Lock()
	h := c.hook
	c.hook = nil
	c.mu.Unlock()
	if h != nil {
		h()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *hookClock) set(now time.Time, hook func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.hook = now, hook
}

// TestCachedCopyDoesNotLeadWhenTheCallEndsAsItLooksUp: the leader of a
// lookup's call ends it with a value while a copy of the lookup looks up,
// after the copy found no live entry in the local cache and before it joins
// the single flight. The copy takes that value; it does not lead a second
// call (which would send the lookup again).
func TestCachedCopyDoesNotLeadWhenTheCallEndsAsItLooksUp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := &hookClock{now: t0}
	f := batchCore(t, func(f *worker.Core) {
		f.SetClock(clk)
		f.Cache = &terms.CacheSpec{Size: 8, TTL: time.Minute}
	})
	ctx := context.Background()
	el, err := f.Prepare("k", 7, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.ResultCache()
	if err != nil {
		t.Fatal(err)
	}
	// An expired entry: a look into the local cache reads the clock (the
	// hook) after it found the entry and before it reports the miss.
	old, err := f.EncodeOutputs([]any{"old"})
	if err != nil {
		t.Fatal(err)
	}
	rc.Local.Add(f.CacheKey(el, rc.Shape), old, 0)
	clk.set(t0.Add(2*time.Minute), nil)

	lead := f.Cached(el, state.Job{Item: &worker.BatchItem{F: f, El: el}})
	if l := lead.Lookup(ctx); l.Abandon == nil {
		t.Fatalf("the first copy does not lead: %+v", l)
	}
	copyJob := f.Cached(el, state.Job{Item: &worker.BatchItem{F: f, El: el}})
	clk.set(t0.Add(2*time.Minute), func() {
		outs, err := lead.Item.(*worker.BatchItem).After(ctx, 1, func() ([]any, error) { return []any{"v"}, nil }, nil)
		if err != nil || len(outs) != 1 {
			t.Errorf("the lead's answer: %v, %v", outs, err)
		}
	})
	l := copyJob.Lookup(ctx)
	if l.Abandon != nil {
		l.Abandon()
		t.Fatalf("the copy leads a second call of the lookup, whose call ended with a value as it looked up")
	}
	if !l.Hit || len(l.Outputs) != 1 || l.Outputs[0] != "v" {
		t.Errorf("the copy's lookup: %+v; want a hit with the lead's outputs [v]", l)
	}
	if n := rc.Misses.Load(); n != 1 {
		t.Errorf("%d calls made; want 1", n)
	}
}

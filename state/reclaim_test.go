package state

import (
	"context"
	"slices"
	"sort"
	"testing"
)

// TestReclaim: Reclaim ends every wait for room and frees the places kept,
// then removes, up to its limit, the tasks with places that which picks,
// whenever their owners were last touched; tasks without a place are never
// offered.
func TestReclaim(t *testing.T) {
	finished := func(t *Task) bool { return t.Status() == Finished }
	for _, tc := range []struct {
		name  string
		which func(*Task) bool
		limit int
		// want is the removed tasks (owner/ID); held the places tasks hold
		// after.
		want []string
		held int
	}{
		{"every task with a place", func(*Task) bool { return true }, 0, []string{"a/done", "a/run", "b/run"}, 0},
		{"none: only the waits end", func(*Task) bool { return false }, 0, nil, 3},
		{"the finished only", finished, 0, []string{"a/done"}, 2},
		{"the unfinished only", func(t *Task) bool { return !finished(t) }, 0, []string{"a/run", "b/run"}, 1},
		{"of one owner", func(t *Task) bool { return t.Key.Owner == "b" }, 0, []string{"b/run"}, 2},
		{"at most the limit", func(*Task) bool { return true }, 2, nil, 1}, // two of three, any two
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPool(t, Config{Parallelism: 4, Buffer: 4})
			block := func(ctx context.Context, _ int) ([]any, error) { <-ctx.Done(); return nil, ctx.Err() }
			done := func(context.Context, int) ([]any, error) { return []any{"x"}, nil }
			submit := func(owner, id string, work Work) *Task {
				task, adm, err := p.Submit(context.Background(), TaskKey{owner, ElementID{ID: id}}, 0, Job{Work: work})
				if err != nil || adm != Started {
					t.Fatalf("Submit(%s/%s) = %v, %v; want Started", owner, id, adm, err)
				}
				return task
			}
			wait(t, submit("a", "done", done))
			submit("a", "run", block)
			submit("b", "run", block)
			head, _, err := p.StartUnbuffered(TaskKey{"b", ElementID{ID: "head"}}, Job{Work: block})
			if err != nil {
				t.Fatal(err)
			}
			p.Waiting("w", true) // takes the last free place, kept for w
			p.Waiting("v", true) // waits behind w
			if p.HasRoom("x") {
				t.Fatal("before Reclaim: room for another owner; want every place taken or kept")
			}
			removed := p.Reclaim(tc.which, tc.limit)
			var got []string
			for _, r := range removed {
				got = append(got, r.Key.Owner+"/"+r.Key.Element.ID)
				if p.Lookup(r.Key) != nil {
					t.Errorf("%s removed but still in the pool", r.Key.Element.ID)
				}
			}
			sort.Strings(got)
			switch {
			case tc.limit > 0 && len(got) != tc.limit:
				t.Errorf("removed %v; want %d of them", got, tc.limit)
			case tc.limit <= 0 && !slices.Equal(got, tc.want):
				t.Errorf("removed %v; want %v", got, tc.want)
			}
			if h := p.Held(); h != tc.held {
				t.Errorf("places held by tasks after = %d; want %d", h, tc.held)
			}
			if p.Lookup(head.Key) != head {
				t.Error("the task without a place was removed")
			}
			if !p.HasRoom("x") || p.room.has("w") || p.room.has("v") {
				t.Errorf("after Reclaim: room for another owner %v, w waits or has a place kept %v, v waits %v; want room and no waits",
					p.HasRoom("x"), p.room.has("w"), p.room.has("v"))
			}
			if free := 4 - p.Held(); !p.hold.TryAcquire(int64(free)) {
				t.Errorf("%d places should be free to take", free)
			}
		})
	}
}

package state

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkSubmitFinish measures one element's path through the pool:
// admission, a slot, a trivial call, and removal at commit.
func BenchmarkSubmitFinish(b *testing.B) {
	p, err := newPool(Config{Parallelism: 64, Buffer: 128})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	work := func(context.Context, int) ([]any, error) { return []any{1}, nil }
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		t, _, _ := p.Submit(context.Background(), TaskKey{Owner: "k", Element: ElementID{ID: strconv.Itoa(i)}}, 0, Job{Work: work})
		<-t.Done()
		p.Remove(t)
		i++
	}
}

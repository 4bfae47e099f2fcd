package async

import (
	"fmt"
	"testing"
)

// BenchmarkCommit measures one commit callback of a key holding n elements
// whose calls are still running: the scan of bag state and of the pool that
// every callback pays.
func BenchmarkCommit(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			name := fmt.Sprintf("bench-commit-%d", n)
			h := newHarness(b, &gated{Name: name}, stringKey, WithParallelism(n), WithMaxItemsToBuffer(n))
			f := h.stream()
			for v := 0; v < n; v++ {
				h.process(f, "a", v)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.fire(f, "a"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for v := 0; v < n; v++ {
				book.open(gateID(name, "a", v))
			}
		})
	}
}

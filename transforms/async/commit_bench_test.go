package async

import (
	"fmt"
	"testing"
)

// BenchmarkCommit measures one timer callback of a key whose calls are
// still running: the read of its pending elements and the scan of the pool
// that every callback pays. With a backlog, the key's elements beyond
// WithMaxItemsHeld wait in the queue bag, which a callback with no room to
// start them never reads: its cost does not grow with the backlog.
func BenchmarkCommit(b *testing.B) {
	for _, tc := range []struct{ held, backlog int }{{100, 0}, {10_000, 0}, {100, 10_000}} {
		b.Run(fmt.Sprintf("held=%d/backlog=%d", tc.held, tc.backlog), func(b *testing.B) {
			name := fmt.Sprintf("bench-commit-%d-%d", tc.held, tc.backlog)
			h := newHarness(b, &gated{Name: name}, stringKey, WithParallelism(tc.held), WithMaxItemsToBuffer(tc.held), WithMaxItemsHeld(tc.held))
			f := h.stream()
			n := tc.held + tc.backlog
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

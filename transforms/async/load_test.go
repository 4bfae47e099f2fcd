package async

import (
	"flag"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"
)

var loadElements = flag.Int("load.elements", 100_000, "elements of the long load run in TestLoadMemoryIsFlat (1,000,000 for the full run)")

// loadSeed is the simFn seed of the load runs, which no simulator schedule
// uses (their seeds are below 2^32).
const loadSeed = 1 << 40

// loadRun streams n elements over 100 keys through the commit machine, in
// batches committed as they finish, and returns the peak live heap seen
// after a GC (sampled every 10,000 elements) and the number of outputs.
func loadRun(t *testing.T, n int) (peak uint64, outputs int) {
	h := newHarness(t, &simFn{Seed: loadSeed}, reflect.TypeOf(""), WithParallelism(64), WithMaxItemsToBuffer(2048))
	f := h.stream()
	const keys, batch = 100, 1000
	var ms runtime.MemStats
	for start := 0; start < n; start += batch {
		for v := start; v < min(start+batch, n); v++ {
			h.process(f, fmt.Sprintf("k%d", v%keys), v)
		}
		for k := 0; k < keys; k++ {
			key := fmt.Sprintf("k%d", k)
			for h.st(key).size() > 0 {
				h.waitKey(key)
				out, err := h.fire(f, key)
				if err != nil {
					t.Fatalf("commit: %v", err)
				}
				outputs += len(out)
			}
		}
		// The harness keeps each output's timestamp, and simFn counts each
		// element's calls, for the tests that check them; this one does not,
		// and must measure the transform, not them.
		clear(h.stamps)
		simCalls.Lock()
		delete(simCalls.calls, loadSeed)
		simCalls.Unlock()
		if start%10_000 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	return peak, outputs
}

// TestLoadMemoryIsFlat runs a long load and checks that worker memory does
// not grow with the number of elements: with every key committed as it goes,
// bag state stays small, and the peak live heap of a run ten times longer
// stays within a small margin of the shorter run's.
func TestLoadMemoryIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("long load run; skipped with -short")
	}
	n := *loadElements
	start := time.Now()
	small, smallOut := loadRun(t, n/10)
	big, bigOut := loadRun(t, n)
	if smallOut != n/10 || bigOut != n {
		t.Fatalf("outputs = %d and %d, want %d and %d", smallOut, bigOut, n/10, n)
	}
	fmt.Printf("load: elements=%d peak_heap_mb=%.1f elements=%d peak_heap_mb=%.1f wall=%s\n",
		n/10, float64(small)/(1<<20), n, float64(big)/(1<<20), time.Since(start).Round(time.Millisecond))
	if big > 2*small+8<<20 {
		t.Errorf("peak heap grew from %d KiB (%d elements) to %d KiB (%d elements); want it flat", small>>10, n/10, big>>10, n)
	}
}

package async

import (
	"runtime"
	"testing"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
	"github.com/asyncbeam/asyncbeam/transforms/internal/ledger"
)

// TestBundleTicketsRepublishWhatAFailedBundleTook: counts taken by a
// bundle that fails (released) or whose instance is dropped unfinished
// (collected) are taken again by a later bundle; a finished bundle's are
// never taken again.
func TestBundleTicketsRepublishWhatAFailedBundleTook(t *testing.T) {
	l := ledger.New(1)
	total := []int64{5}
	a, b := &worker.BundleTickets{}, &worker.BundleTickets{}
	a.Begin()
	b.Begin()
	if d, _ := a.Take(l, total); d[0] != 5 {
		t.Fatalf("first bundle took %d; want 5", d[0])
	}
	if d, _ := b.Take(l, total); d[0] != 0 {
		t.Fatalf("second bundle took %d while the first holds them; want 0", d[0])
	}
	a.Release() // the first bundle failed
	if d, _ := b.Take(l, total); d[0] != 5 {
		t.Fatalf("second bundle took %d after the first failed; want 5", d[0])
	}
	b.Finish()
	a.Begin()
	if d, _ := a.Take(l, total); d[0] != 0 {
		t.Errorf("a bundle after the second finished took %d; want 0", d[0])
	}

	// An instance dropped with its bundle open: its cleanup releases.
	func() {
		owner := &worker.Core{}
		owner.SetTickets(worker.NewBundleTickets(owner))
		owner.Tickets().Begin()
		if d, _ := owner.Tickets().Take(l, []int64{8}); d[0] != 3 {
			t.Fatalf("dropped instance took %d; want 3", d[0])
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		if d, _ := l.Take(0, []int64{8}); d[0] == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the counts of a collected instance's open bundle were never released")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAnInstanceThatMadeThePoolIsCollected: the pool, which lives as long
// as the process, holds nothing of the DoFn instance that made it, so a
// dropped instance is collected and its open bundle released.
func TestAnInstanceThatMadeThePoolIsCollected(t *testing.T) {
	reg := state.NewRegistry()
	collected := make(chan struct{})
	func() {
		f := batchCore(t)
		f.SetRegistry(reg)
		if _, err := f.Pool(); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Shared(f.ID, f.PoolConfig(time.Now, nil)); err != nil { // the gate is built
			t.Fatal(err)
		}
		runtime.AddCleanup(f, func(ch chan struct{}) { close(ch) }, collected)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		select {
		case <-collected:
			runtime.KeepAlive(reg)
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("an instance that made its transform's pool is never collected: the pool holds it")
		}
	}
}

package async

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func panickyID(v int) string  { panic("no ID for you") }
func constantID(v int) string { return "same" }

// TestBadInputAtRuntime covers the bad inputs that construction cannot see,
// each with its documented outcome.
func TestBadInputAtRuntime(t *testing.T) {
	t.Run("ID function panics: the bundle fails with the cause", func(t *testing.T) {
		h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithIDFn(panickyID))
		f := h.stream()
		err := f.ProcessElement(context.Background(), 0, h.st("a"), h.tm("a"), "a", 1, nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "no ID for you") {
			t.Errorf("ProcessElement error = %v, want the ID function's panic", err)
		}
	})
	t.Run("ID function gives one ID for everything: one element per key", func(t *testing.T) {
		h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithIDFn(constantID))
		f := h.stream()
		for v := 1; v <= 3; v++ { // pending at the same time: one element
			h.process(f, "a", v)
		}
		openAll(testName(t), "a", 4)
		h.waitFinished("a", 1)
		if got := mustFire(t, h, f, "a"); !reflect.DeepEqual(got, []string{"a:1#0"}) {
			t.Errorf("commit = %v, want only the first element (all share one ID)", got)
		}
	})
	t.Run("fn never returns, with a call timeout: a timeout failure", func(t *testing.T) {
		h := newHarnessFailures(t, true, &gated{Name: testName(t)}, stringKey, WithCallTimeout(10*time.Millisecond))
		f := h.stream()
		h.process(f, "a", 1) // its gate is never opened
		h.waitFinished("a", 1)
		mustFire(t, h, f, "a")
		if len(h.failed) != 1 || h.failed[0].Kind != KindTimeout {
			t.Errorf("failures = %+v, want one of kind timeout", h.failed)
		}
	})
	t.Run("fn never returns, without a call timeout: the key waits, nothing is lost", func(t *testing.T) {
		h := newHarness(t, &gated{Name: testName(t)}, stringKey)
		f := h.stream()
		h.process(f, "a", 1)
		for i := 0; i < 3; i++ {
			if got := mustFire(t, h, f, "a"); len(got) != 0 {
				t.Fatalf("commit emitted %v for an element still running", got)
			}
			if _, ok := h.tm("a").take(); !ok {
				t.Fatal("the commit of a key with running work did not re-arm")
			}
		}
		if h.st("a").size() != 1 {
			t.Error("the running element left bag state")
		}
		book.open(gateID(testName(t), "a", 1)) // let the goroutine end
	})
	t.Run("zero key and zero value", func(t *testing.T) {
		h := newHarness(t, &gated{Name: testName(t)}, stringKey)
		f := h.stream()
		book.open(gateID(testName(t), "", 0))
		h.process(f, "", 0)
		h.waitFinished("", 0)
		if got := mustFire(t, h, f, ""); !reflect.DeepEqual(got, []string{":0#0"}) {
			t.Errorf("commit = %v, want [:0#0]", got)
		}
	})
}

func TestWrappedFnErrorsAreNotSwallowed(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, stringKey)
	f := h.stream()
	id := gateID(testName(t), "a", 1)
	book.planErrors(id, errors.New("quota exceeded"))
	book.open(id)
	h.process(f, "a", 1)
	h.waitFinished("a", 1)
	if _, err := h.fire(f, "a"); err == nil || !strings.Contains(err.Error(), "quota exceeded") {
		t.Errorf("commit error = %v, want the fn's error", err)
	}
}

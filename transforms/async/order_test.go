package async

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/asyncbeam/asyncbeam/state"
)

// jittery sleeps a pseudo-random 0-7 ms per element (a hash of Seed, key and
// value), so that calls finish out of order, then emits "key:value".
type jittery struct{ Seed int }

func (f *jittery) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%s/%d", f.Seed, key, v)
	select {
	case <-time.After(time.Duration(h.Sum32()%8) * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	emit(fmt.Sprintf("%s:%d", key, v))
	return nil
}

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&jittery{})
}

// checkKeyOrder checks that outputs "key:value" hold every value of every
// key once, each key's values in increasing order.
func checkKeyOrder(t *testing.T, outputs []string, keys, perKey int) {
	t.Helper()
	last := map[string]int{}
	count := map[string]int{}
	for _, o := range outputs {
		key, v, _ := strings.Cut(o, ":")
		n, _ := strconv.Atoi(v)
		if prev, ok := last[key]; ok && n <= prev {
			t.Errorf("key %s: output %d came after %d", key, n, prev)
		}
		last[key] = n
		count[o]++
	}
	for k := 0; k < keys; k++ {
		for v := 0; v < perKey; v++ {
			if o := fmt.Sprintf("k%d:%d", k, v); count[o] != 1 {
				t.Errorf("output %s committed %d times, want 1", o, count[o])
			}
		}
	}
}

// TestOrderedStreamRandomLatenciesAndRestart commits keys whose calls finish
// out of order, with a worker restart part-way: each key's outputs must come
// in input order, each once.
func TestOrderedStreamRandomLatenciesAndRestart(t *testing.T) {
	for _, seed := range []int{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			const keys, perKey = 3, 12
			h := newHarness(t, &jittery{Seed: seed}, reflect.TypeOf(""), WithOrdered(), WithParallelism(4), WithMaxItemsToBuffer(6))
			h.c.SetRegistry(state.NewRegistry())
			f := h.stream()
			var outputs []string
			fireAll := func() {
				for k := 0; k < keys; k++ {
					key := fmt.Sprint("k", k)
					h.waitKey(key)
					out, err := h.fire(f, key)
					if err != nil {
						t.Fatalf("commit of %s: %v", key, err)
					}
					outputs = append(outputs, out...)
				}
			}
			for v := 0; v < perKey; v++ {
				for k := 0; k < keys; k++ {
					h.process(f, fmt.Sprint("k", k), v)
				}
				if v%3 == 2 {
					fireAll()
				}
				if v == perKey/2 {
					if err := h.c.Registry().Reset(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			for round := 0; round < 100 && len(outputs) < keys*perKey; round++ {
				h.clock.Advance(time.Second)
				fireAll()
			}
			checkKeyOrder(t, outputs, keys, perKey)
		})
	}
}

// TestOrderedBundleRandomLatencies runs keys whose calls finish out of
// order through one bundle, with a buffer smaller than a key's input.
func TestOrderedBundleRandomLatencies(t *testing.T) {
	const keys, perKey = 2, 20
	h := newHarness(t, &jittery{Seed: 7}, reflect.TypeOf(""), WithOrdered(), WithParallelism(4), WithMaxItemsToBuffer(5))
	var in []bundleElem
	for v := 0; v < perKey; v++ {
		for k := 0; k < keys; k++ {
			in = append(in, bundleElem{key: fmt.Sprint("k", k), v: v})
		}
	}
	out, err := h.runBundle(h.bundleFn(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkKeyOrder(t, out.outputs, keys, perKey)
}

// TestOrderedHeadStartsWithoutRoom sets up the one case where order could
// deadlock: the key's first element waits for its retry while the second,
// started in the freed place, finishes and holds the only buffer place. When
// the retry is due it must start anyway, and both commit in order.
func TestOrderedHeadStartsWithoutRoom(t *testing.T) {
	name := testName(t)
	h := newHarness(t, &gated{Name: name}, reflect.TypeOf(""), WithOrdered(), WithParallelism(1), WithMaxItemsToBuffer(1),
		WithMaxAttempts(2), WithBackoff(FixedBackoff(time.Second)))
	f := h.stream()
	book.planErrors(gateID(name, "k", 0), errors.New("transient"))
	book.open(gateID(name, "k", 1))
	h.process(f, "k", 0)
	h.process(f, "k", 1) // no room: queued in bag state
	book.open(gateID(name, "k", 0))
	h.waitFinished("k", 0)
	if out, err := h.fire(f, "k"); err != nil || len(out) != 0 {
		t.Fatalf("first commit = %v, %v; want nothing yet (0 retries, 1 starts)", out, err)
	}
	h.waitFinished("k", 1)
	h.clock.Advance(time.Second)
	if out, err := h.fire(f, "k"); err != nil || len(out) != 0 {
		t.Fatalf("second commit = %v, %v; want nothing: 1 is held back for 0", out, err)
	}
	h.waitKey("k")
	out, err := h.fire(f, "k")
	if want := []string{"k:0#0", "k:1#0"}; err != nil || !reflect.DeepEqual(out, want) {
		t.Errorf("third commit = %v, %v; want %v", out, err, want)
	}
	if n := h.st("k").size(); n != 0 {
		t.Errorf("bag state holds %d entries after the last commit, want 0", n)
	}
}

// TestOrderedSequenceFromBag: numbers count on within a bundle, continue
// from the highest number in bag state in a new bundle (another worker, or
// after a restart), and start again at 1 once the key's bag has emptied.
func TestOrderedSequenceFromBag(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, reflect.TypeOf(""), WithOrdered())
	f := h.stream()
	seqs := func() []int64 {
		var out []int64
		for _, env := range h.st("k").envelopes() {
			out = append(out, env.Seq)
		}
		return out
	}
	h.process(f, "k", 0) // each process call is a bundle of its own
	h.process(f, "k", 1)
	other := h.stream() // another DoFn instance, as after a restart
	h.process(other, "k", 2)
	if got, want := seqs(), []int64{1, 2, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("sequence numbers = %v, want %v", got, want)
	}
	openAll(testName(t), "k", 3)
	h.waitKey("k")
	if _, err := h.fire(f, "k"); err != nil {
		t.Fatal(err)
	}
	h.process(f, "k", 3)
	book.open(gateID(testName(t), "k", 3))
	if got, want := seqs(), []int64{1}; !reflect.DeepEqual(got, want) {
		t.Errorf("sequence after the key emptied = %v, want %v", got, want)
	}
}

// TestHeldBackResultWaitsForTheRetry: with WithOrdered, a later element's
// result kept behind an earlier element that waits out its backoff is not
// work to come back for: the quiet key's timer is set for when the retry is
// due, not on every step of the commit grid until then.
func TestHeldBackResultWaitsForTheRetry(t *testing.T) {
	const backoff = 5 * time.Second
	h := newHarnessFailures(t, true, &gated{Name: testName(t)}, stringKey, WithOrdered(),
		WithMaxAttempts(2), WithBackoff(FixedBackoff(backoff)))
	f := h.stream()
	first := gateID(testName(t), "a", 1)
	book.planErrors(first, errFlaky)
	h.process(f, "a", 1)
	h.clock.Advance(100 * time.Millisecond)
	h.process(f, "a", 2)         // a busy key at its elements: 100 ms apart
	openAll(testName(t), "a", 3) // after both: a:2's ProcessElement must not meet a:1's failure
	h.waitFinished("a", 1)
	h.waitFinished("a", 2)
	h.tm("a").take()
	h.clock.Advance(3 * time.Second) // no element for longer than the busy threshold: quiet at its timer
	if got, err := h.fire(f, "a"); err != nil || len(got) != 0 {
		t.Fatalf("commit with the first element failed once = %v (%v), want nothing: a:2 waits behind a:1", got, err)
	}
	due := h.clock.Now().Add(backoff)
	if next, ok := h.tm("a").take(); !ok || !next.Equal(due) {
		t.Errorf("re-armed at %v (set %v) with a:2 held back, want when a:1's retry is due, %v", next, ok, due)
	}
	h.clock.Advance(backoff)
	if got, want := retryUntilDone(t, h, f, "a"), []string{"a:1#0", "a:2#0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("outputs = %v, want %v", got, want)
	}
	if got := book.count(first); got != 2 {
		t.Errorf("a:1 called %d times, want 2 (one retry)", got)
	}
}

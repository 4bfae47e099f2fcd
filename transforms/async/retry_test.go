package async

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

var errFlaky = errors.New("flaky backend")

func notTimeout(err error) bool { return !strings.Contains(err.Error(), "timed out") }

func TestBackoffDelay(t *testing.T) {
	seed := []byte("k/id")
	tests := []struct {
		name  string
		b     Backoff
		retry int
		want  time.Duration
	}{
		{"fixed first", FixedBackoff(time.Second), 1, time.Second},
		{"fixed fifth", FixedBackoff(time.Second), 5, time.Second},
		{"exponential first", Backoff{Initial: 100 * time.Millisecond, Max: time.Minute, Multiplier: 2}, 1, 100 * time.Millisecond},
		{"exponential third", Backoff{Initial: 100 * time.Millisecond, Max: time.Minute, Multiplier: 2}, 3, 400 * time.Millisecond},
		{"capped", Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 10}, 4, time.Second},
		{"huge retry stays capped", Backoff{Initial: time.Second, Max: time.Hour, Multiplier: 2}, 5000, time.Hour},
	}
	for _, tc := range tests {
		if got := tc.b.Delay(tc.retry, seed); got != tc.want {
			t.Errorf("%s: Delay(%d) = %v, want %v", tc.name, tc.retry, got, tc.want)
		}
	}
	j := ExponentialBackoff(time.Second, time.Minute)
	for retry := 1; retry <= 4; retry++ {
		base := time.Duration(float64(time.Second) * float64(int(1)<<(retry-1)))
		got := j.Delay(retry, seed)
		if got > base || got < time.Duration(float64(base)*0.8) {
			t.Errorf("jittered Delay(%d) = %v, want within [0.8, 1] x %v", retry, got, base)
		}
		if again := j.Delay(retry, seed); again != got {
			t.Errorf("jittered Delay(%d) is not deterministic: %v then %v", retry, got, again)
		}
	}
}

// TestBackoffDelayStaysInRange: past the float range the exponential is
// +Inf and 0 x +Inf is NaN, which once became the most negative duration
// (found by FuzzOptions; testdata/fuzz/FuzzOptions/nan-delay-at-retry-162).
func TestBackoffDelayStaysInRange(t *testing.T) {
	for _, tc := range []struct {
		b     Backoff
		retry int
	}{
		{Backoff{Initial: 0, Max: 0, Multiplier: 171.25}, 162},
		{Backoff{Initial: 0, Max: time.Second, Multiplier: 1e300}, 3},
		{Backoff{Initial: time.Millisecond, Max: time.Minute, Multiplier: 10}, 10_000},
		{Backoff{Initial: time.Millisecond, Max: time.Minute, Multiplier: 2, Jitter: 1}, 1 << 30},
		{Backoff{Initial: time.Second, Max: math.MaxInt64, Multiplier: 2}, 100}, // float64(Max) rounds above it
		{Backoff{Initial: math.MaxInt64, Max: math.MaxInt64, Multiplier: 1}, 1},
	} {
		if d := tc.b.Delay(tc.retry, []byte("seed")); d < 0 || d > tc.b.Max {
			t.Errorf("%+v.Delay(%d) = %v, want within [0, %v]", tc.b, tc.retry, d, tc.b.Max)
		}
	}
}

func TestBackoffValidation(t *testing.T) {
	for _, b := range []Backoff{
		{Initial: -1, Max: 0, Multiplier: 1},
		{Initial: 2, Max: 1, Multiplier: 1},
		{Initial: 1, Max: 1, Multiplier: 0.5},
		{Initial: 1, Max: 1, Multiplier: 1, Jitter: 2},
	} {
		if _, err := resolve([]Option{WithBackoff(b)}); err == nil {
			t.Errorf("WithBackoff(%+v) accepted, want an error", b)
		}
	}
	for _, o := range []Option{WithMaxAttempts(0), WithCallTimeout(-1), WithFallbacks()} {
		if _, err := resolve([]Option{o}); err == nil {
			t.Error("an invalid failure option was accepted")
		}
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("x"), KindError},
		{Permanent(errors.New("x")), KindPermanent},
		{fmt.Errorf("wrapped: %w", Permanent(errors.New("x"))), KindPermanent},
		{&terms.TimeoutError{Limit: time.Second}, KindTimeout},
		{&state.PanicError{Value: "x"}, KindPanic},
	}
	for _, tc := range tests {
		if got := terms.KindOf(tc.err); got != tc.want {
			t.Errorf("kindOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
}

// retryUntilDone fires the key's commit, moving the clock to each re-arm,
// until its bag state is empty; it returns everything emitted.
func retryUntilDone(t *testing.T, h *harness, f *streamFn, key any) []string {
	t.Helper()
	var out []string
	for round := 0; round < 50; round++ {
		if h.st(key).size() == 0 {
			return sorted(out)
		}
		p, _ := h.c.Pool()
		for _, task := range p.ForOwner(h.owner(key)) {
			select {
			case <-task.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("a task did not finish")
			}
		}
		got, err := h.fire(f, key)
		if err != nil {
			t.Fatalf("commit: %v", err)
		}
		out = append(out, got...)
		if next, ok := h.tm(key).take(); ok && next.After(h.clock.Now()) {
			h.clock.Advance(next.Sub(h.clock.Now()))
		}
	}
	t.Fatalf("key %v not done after 50 commits", key)
	return nil
}

func mustEncode(t *testing.T, h *harness, key any) []byte {
	kb, err := h.c.EncodeKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

func TestRetriesThenSuccess(t *testing.T) {
	h := newHarnessFailures(t, true, &gated{Name: testName(t)}, stringKey,
		WithMaxAttempts(3), WithBackoff(FixedBackoff(5*time.Second)), WithFallbacks("primary", "secondary"))
	f := h.stream()
	id := gateID(testName(t), "a", 1)
	book.planErrors(id, errFlaky, errFlaky)
	book.open(id)
	h.process(f, "a", 1)
	h.waitFinished("a", 1)
	h.tm("a").take()
	h.clock.Advance(time.Second) // no element for a while: the key is quiet
	if got, _ := h.fire(f, "a"); len(got) != 0 {
		t.Fatalf("commit after a failed attempt emitted %v", got)
	}
	// The retry waits in bag state, holding no task and no slot.
	p, _ := h.c.Pool()
	if p.Len() != 0 {
		t.Errorf("a retrying element holds %d local tasks, want 0", p.Len())
	}
	env := h.st("a").envelopes()[0]
	if env.Attempts != 1 || env.LastKind != KindError || env.NextAttemptMs != h.clock.Now().Add(5*time.Second).UnixMilli() {
		t.Errorf("bag state after one failure = attempts %d, kind %q, next %d; want 1, error, now+5s", env.Attempts, env.LastKind, env.NextAttemptMs)
	}
	next, ok := h.tm("a").take()
	if !ok || !next.Equal(h.clock.Now().Add(5*time.Second)) {
		t.Errorf("re-armed at %v (set %v), want when the retry is due, %v", next, ok, h.clock.Now().Add(5*time.Second))
	}
	// Not due yet: nothing starts.
	h.fire(f, "a")
	if p.Len() != 0 {
		t.Error("a retry started before its backoff ended")
	}
	h.clock.Advance(5 * time.Second)
	if got := retryUntilDone(t, h, f, "a"); !reflect.DeepEqual(got, []string{"a:1#0"}) {
		t.Errorf("outputs = %v, want [a:1#0]", got)
	}
	want := []string{"1/primary", "2/secondary", "3/secondary"}
	if got := book.attempts(id); !reflect.DeepEqual(got, want) {
		t.Errorf("attempt/fallback per call = %v, want %v", got, want)
	}
	if len(h.failed) != 0 {
		t.Errorf("failures = %v, want none", h.failed)
	}
}

func TestFinalFailures(t *testing.T) {
	tests := []struct {
		name         string
		plan         []error
		panicValue   any
		opts         []Option
		wantKind     string
		wantAttempts int
		wantText     string
	}{
		{"attempts exhausted", []error{errFlaky, errFlaky}, nil, []Option{WithMaxAttempts(2), WithBackoff(FixedBackoff(0))}, KindError, 2, "flaky backend"},
		{"permanent is not retried", []error{Permanent(errors.New("bad request"))}, nil, []Option{WithMaxAttempts(5)}, KindPermanent, 1, "bad request"},
		{"predicate says no", []error{errFlaky}, nil, []Option{WithMaxAttempts(5), WithRetryIf(func(error) bool { return false })}, "", 0, ""},
		{"panic", nil, "boom", []Option{WithMaxAttempts(1)}, KindPanic, 1, "goroutine"},
		{"timeout", nil, nil, []Option{WithMaxAttempts(1), WithCallTimeout(20 * time.Millisecond)}, KindTimeout, 1, "timed out after 20ms"},
		{"timeouts retried until exhausted", nil, nil, []Option{WithMaxAttempts(2), WithCallTimeout(10 * time.Millisecond), WithBackoff(FixedBackoff(0))}, KindTimeout, 2, "timed out"},
		{"predicate stops timeouts", nil, nil, []Option{WithMaxAttempts(4), WithCallTimeout(10 * time.Millisecond), WithRetryIf(notTimeout)}, KindTimeout, 1, "timed out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "predicate says no" {
				if _, err := resolveAndInspect(tc.opts); err == nil || !strings.Contains(err.Error(), "closure") {
					t.Errorf("a closure predicate was accepted: %v", err)
				}
				return
			}
			h := newHarnessFailures(t, true, &reverting{gated: gated{Name: testName(t)}}, stringKey, tc.opts...)
			f := h.stream()
			id := gateID(testName(t), "a", 1)
			book.mu.Lock()
			book.plan[id] = tc.plan
			if tc.panicValue != nil {
				book.panic[id] = tc.panicValue
			}
			book.mu.Unlock()
			if tc.wantKind != KindTimeout {
				book.open(id)
			}
			h.process(f, "a", 1)
			if got := retryUntilDone(t, h, f, "a"); len(got) != 0 {
				t.Errorf("outputs = %v, want none", got)
			}
			if len(h.failed) != 1 {
				t.Fatalf("failure records = %d, want exactly 1", len(h.failed))
			}
			fr := h.failed[0]
			if fr.Kind != tc.wantKind || fr.Attempts != tc.wantAttempts || !strings.Contains(fr.Error, tc.wantText) {
				t.Errorf("failure = kind %q, attempts %d, error %q; want %q, %d, containing %q", fr.Kind, fr.Attempts, fr.Error, tc.wantKind, tc.wantAttempts, tc.wantText)
			}
			if fr.KeyText != "a" || fr.ValueText != "1" || fr.FirstAttemptUnixMs == 0 || fr.LastAttemptUnixMs < fr.FirstAttemptUnixMs {
				t.Errorf("failure record = %+v; want key a, value 1 and attempt times", fr)
			}
			if n := book.count("revert/" + id); n != 0 {
				t.Errorf("the transform's callbacks called Revert %d times; it runs only on committed failure records", n)
			}
			if after := h.revert(fr); after.CompensationError != "" || book.count("revert/"+id) != 1 {
				t.Errorf("the revert step: CompensationError %q, Revert called %d times; want none, once", after.CompensationError, book.count("revert/"+id))
			}
			if got, _ := h.fire(f, "a"); len(got) != 0 || len(h.failed) != 1 {
				t.Errorf("a later commit emitted %v and %d failures; want nothing more", got, len(h.failed))
			}
		})
	}
}

// resolveAndInspect runs the construction checks of options.
func resolveAndInspect(opts []Option) (settings, error) {
	set, err := resolve(opts)
	if err != nil {
		return set, err
	}
	_, err = inspectRetryIf(set.retryIf)
	return set, err
}

func TestCompensationPanicIsRecorded(t *testing.T) {
	h := newHarnessFailures(t, true, &reverting{gated: gated{Name: testName(t)}, Panic: true}, stringKey, WithMaxAttempts(1))
	f := h.stream()
	id := gateID(testName(t), "a", 1)
	book.planErrors(id, errFlaky)
	book.open(id)
	h.process(f, "a", 1)
	retryUntilDone(t, h, f, "a")
	if len(h.failed) != 1 {
		t.Fatalf("failures = %+v, want one", h.failed)
	}
	if after := h.revert(h.failed[0]); !strings.Contains(after.CompensationError, "revert exploded") {
		t.Errorf("after the revert step: %+v, want CompensationError holding the Revert panic", after)
	}
}

func TestAttemptCountSurvivesRestart(t *testing.T) {
	h := newHarnessFailures(t, true, &gated{Name: testName(t)}, stringKey, WithMaxAttempts(3), WithBackoff(FixedBackoff(time.Second)))
	f := h.stream()
	id := gateID(testName(t), "a", 1)
	book.planErrors(id, errFlaky, errFlaky, errFlaky)
	book.open(id)
	h.process(f, "a", 1)
	h.waitFinished("a", 1)
	h.fire(f, "a") // attempt 1 failed: kept with attempts=1
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := state.Reset(ctx); err != nil { // the worker restarts
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	retryUntilDone(t, h, f, "a")
	if got, want := book.attempts(id), []string{"1/", "2/", "3/"}; !reflect.DeepEqual(got, want) {
		t.Errorf("attempts across a restart = %v, want %v (the count must not reset)", got, want)
	}
	if len(h.failed) != 1 || h.failed[0].Attempts != 3 {
		t.Errorf("failures = %+v, want one after 3 attempts", h.failed)
	}
}

func TestFinalFailureWithoutFailureOutputFailsCommit(t *testing.T) {
	h := newHarness(t, &gated{Name: testName(t)}, stringKey, WithMaxAttempts(1))
	f := h.stream()
	id := gateID(testName(t), "a", 1)
	book.planErrors(id, Permanent(errors.New("no such customer")))
	book.open(id)
	h.process(f, "a", 1)
	h.waitFinished("a", 1)
	_, err := h.fire(f, "a")
	if err == nil || !strings.Contains(err.Error(), "no such customer") || !strings.Contains(err.Error(), "ParDoWithFailures") {
		t.Errorf("commit error = %v, want the cause and a pointer to ParDoWithFailures", err)
	}
}

// TestCopyWaitsOutTheBackoff: with WithIDFn, a copy (an element of equal ID)
// of an element that waits out its backoff in bag state is one element with
// it: it does not start the element early.
func TestCopyWaitsOutTheBackoff(t *testing.T) {
	h := newHarnessFailures(t, true, &gated{Name: testName(t)}, stringKey, WithIDFn(parity), WithMaxAttempts(3), WithBackoff(FixedBackoff(5*time.Second)))
	f := h.stream()
	id := gateID(testName(t), "a", 1)
	book.planErrors(id, errFlaky)
	book.open(id)
	h.process(f, "a", 1)
	h.waitFinished("a", 1)
	h.clock.Advance(time.Second) // quiet: its timer commits it
	if got, _ := h.fire(f, "a"); len(got) != 0 {
		t.Fatalf("commit after a failed attempt emitted %v", got)
	}
	h.clock.Advance(time.Second)
	h.process(f, "a", 1) // a copy, two seconds into the five-second backoff
	p, _ := h.c.Pool()
	if n := book.count(id); p.Len() != 0 || n != 1 {
		t.Errorf("after a copy arrived: %d tasks, %d calls; want 0, 1 (the retry is due in 3 s)", p.Len(), n)
	}
	if got := h.st("a").size(); got != 1 {
		t.Errorf("bag state holds %d elements, want 1", got)
	}
	h.clock.Advance(3 * time.Second)
	if got := retryUntilDone(t, h, f, "a"); !reflect.DeepEqual(got, []string{"a:1#0"}) {
		t.Errorf("outputs = %v, want [a:1#0]", got)
	}
}

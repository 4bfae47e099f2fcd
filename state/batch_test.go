package state

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// batchService is a BatchSend that records its requests. Each item is the
// task's name (a string); the answer is the name and the attempt, unless
// fail says the item fails.
type batchService struct {
	mu       sync.Mutex
	requests [][]string // items of each request, in order
	running  atomic.Int32
	peak     atomic.Int32
	gate     chan struct{}                 // if not nil, each request waits for a receive
	fail     func(item string, n int) bool // per item: fail this attempt
	whole    func(request int) error       // per request: fail it whole
}

func (s *batchService) send(ctx context.Context, items []BatchItem) ([]Outcome, error) {
	n := s.running.Add(1)
	defer s.running.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	s.mu.Lock()
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.Item.(string)
	}
	s.requests = append(s.requests, names)
	req := len(s.requests)
	s.mu.Unlock()
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.whole != nil {
		if err := s.whole(req); err != nil {
			return nil, err
		}
	}
	out := make([]Outcome, len(items))
	for i, it := range items {
		name := it.Item.(string)
		if s.fail != nil && s.fail(name, it.Attempt) {
			out[i].Err = fmt.Errorf("%s failed attempt %d", name, it.Attempt)
			continue
		}
		out[i].Outputs = []any{fmt.Sprintf("%s#%d", name, it.Attempt)}
	}
	return out, nil
}

// sentCount is how many requests carried each item.
func (s *batchService) sentCount() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, r := range s.requests {
		for _, it := range r {
			n[it]++
		}
	}
	return n
}

func (s *batchService) sizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, r := range s.requests {
		out = append(out, len(r))
	}
	return out
}

func retryOnce(attempt int, _ error) (time.Duration, bool) { return time.Millisecond, attempt < 2 }

// submitBatch submits n tasks named t0.. with group(i) as their batch group.
func submitBatch(t *testing.T, p *Pool, n int, group func(int) string, retry Retry) []*Task {
	t.Helper()
	var tasks []*Task
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("t%d", i)
		task, _, err := p.Submit(context.Background(), TaskKey{Owner: "o", Element: ElementID{ID: name}}, -1, Job{Item: name, BatchGroup: group(i), Retry: retry})
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	return tasks
}

func noGroup(int) string { return "" }

// waitJoined waits until every submitted task of a batch pool has joined a
// batch: a task that found a place (every one, with fewer tasks than the
// buffer) holds an element slot from its start until it has joined.
func waitJoined(t *testing.T, p *Pool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.queue.mu.Lock()
		joined := p.queue.freeSlots == p.queue.slots
		p.queue.mu.Unlock()
		if joined {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the tasks did not join their batches in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatchParallelismCountsRequests: with one call slot, requests run one
// at a time, each carries at most Size items, and items that came while a
// request ran go together in the next.
func TestBatchParallelismCountsRequests(t *testing.T) {
	svc := &batchService{gate: make(chan struct{})}
	p := mustPool(t, Config{Parallelism: 1, Buffer: 40, Batch: &BatchConfig{Size: 4, Send: svc.send}})
	tasks := submitBatch(t, p, 10, noGroup, nil)
	waitJoined(t, p) // else, on a slow machine, each join may find the last request gone
	deadline := time.After(10 * time.Second)
	for done := 0; done < 10; {
		select { // let one request through, if one waits
		case svc.gate <- struct{}{}:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatal("the 10 tasks did not finish")
		}
		done = 0
		for _, task := range tasks {
			if task.Status() == Finished {
				done++
			}
		}
	}
	for i, task := range tasks {
		wait(t, task)
		if out, err := task.Result(); err != nil || len(out) != 1 || out[0] != fmt.Sprintf("t%d#1", i) {
			t.Errorf("task %d: Result = %v, %v; want [t%d#1]", i, out, err, i)
		}
	}
	if got := svc.peak.Load(); got != 1 {
		t.Errorf("requests at once: %d; want 1", got)
	}
	sizes := svc.sizes()
	for _, n := range sizes {
		if n < 1 || n > 4 {
			t.Errorf("request sizes %v; want each in [1, 4]", sizes)
		}
	}
	if len(sizes) > 5 {
		t.Errorf("%d requests (%v) for 10 items; want items gathered while a request runs (at most 5)", len(sizes), sizes)
	}
	for name, n := range svc.sentCount() {
		if n != 1 {
			t.Errorf("%s sent %d times; want once", name, n)
		}
	}
}

// TestBatchRetriesOnlyFailedItems: an item that fails is sent again (in a
// later request); the others are not.
func TestBatchRetriesOnlyFailedItems(t *testing.T) {
	svc := &batchService{fail: func(item string, n int) bool { return n == 1 && (item == "t1" || item == "t4") }}
	p := mustPool(t, Config{Parallelism: 2, Buffer: 40, Batch: &BatchConfig{Size: 8, Wait: 20 * time.Millisecond, Send: svc.send}})
	tasks := submitBatch(t, p, 6, noGroup, retryOnce)
	for i, task := range tasks {
		wait(t, task)
		want, wantAttempts := fmt.Sprintf("t%d#1", i), 1
		if i == 1 || i == 4 {
			want, wantAttempts = fmt.Sprintf("t%d#2", i), 2
		}
		if out, err := task.Result(); err != nil || len(out) != 1 || out[0] != want || task.Attempts() != wantAttempts {
			t.Errorf("task %d: Result = %v, %v after %d attempts; want [%s] after %d", i, out, err, task.Attempts(), want, wantAttempts)
		}
	}
	for name, n := range svc.sentCount() {
		want := 1
		if name == "t1" || name == "t4" {
			want = 2
		}
		if n != want {
			t.Errorf("%s sent %d times; want %d", name, n, want)
		}
	}
}

// TestBatchWholeFailureIsAnAttemptOfEach: a request that fails whole fails
// the attempt of every item in it; without a retry each finishes with the
// request's error, with one retry each succeeds on its second attempt.
func TestBatchWholeFailureIsAnAttemptOfEach(t *testing.T) {
	down := errors.New("service down")
	for _, tc := range []struct {
		name  string
		retry Retry
		want  func(i int) string
	}{
		{"no retry", nil, func(int) string { return "error" }},
		{"one retry", retryOnce, func(i int) string { return fmt.Sprintf("t%d#2", i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &batchService{whole: func(req int) error {
				if req == 1 {
					return down
				}
				return nil
			}}
			p := mustPool(t, Config{Parallelism: 1, Buffer: 10, Batch: &BatchConfig{Size: 5, Wait: 50 * time.Millisecond, Send: svc.send}})
			tasks := submitBatch(t, p, 3, noGroup, tc.retry)
			for i, task := range tasks {
				wait(t, task)
				out, err := task.Result()
				got := "error"
				if err == nil && len(out) == 1 {
					got = out[0].(string)
				} else if !errors.Is(err, down) {
					got = fmt.Sprintf("%v", err)
				}
				if got != tc.want(i) {
					t.Errorf("task %d: got %q (Result %v, %v); want %q", i, got, out, err, tc.want(i))
				}
			}
			if sizes := svc.sizes(); sizes[0] != 3 {
				t.Errorf("request sizes %v; want the first to carry all 3 items (gathered for 50 ms)", sizes)
			}
		})
	}
}

// TestBatchGateCountsRequests: the gate is asked once per request, and a
// request it sends back is made later with the same items.
func TestBatchGateCountsRequests(t *testing.T) {
	svc := &batchService{}
	g := &fakeGate{sendBack: 1}
	p := mustPool(t, Config{Parallelism: 1, Buffer: 10, Gate: func() Gate { return g },
		Batch: &BatchConfig{Size: 5, Wait: 50 * time.Millisecond, Send: svc.send}})
	tasks := submitBatch(t, p, 5, noGroup, nil)
	for _, task := range tasks {
		wait(t, task)
		if _, err := task.Result(); err != nil || task.Attempts() != 1 {
			t.Errorf("%v: error %v after %d attempts; want success after 1", task.Key, err, task.Attempts())
		}
	}
	reqs := len(svc.sizes())
	if n := int(g.enterings.Load()); n != reqs+1 {
		t.Errorf("gate asked %d times for %d requests (%v); want one more than the requests (the one it sent back)", n, reqs, svc.sizes())
	}
	g.mu.Lock()
	reported := len(g.reported)
	g.mu.Unlock()
	if reported != reqs {
		t.Errorf("gate told of %d requests' ends; want %d", reported, reqs)
	}
}

// TestBatchGroupsStayApart: items of different groups are never in one
// request.
func TestBatchGroupsStayApart(t *testing.T) {
	svc := &batchService{}
	p := mustPool(t, Config{Parallelism: 2, Buffer: 40, Batch: &BatchConfig{Size: 10, Wait: 30 * time.Millisecond, Send: svc.send}})
	group := func(i int) string { return fmt.Sprint(i % 3) }
	for _, task := range submitBatch(t, p, 12, group, nil) {
		wait(t, task)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	for _, r := range svc.requests {
		var g0 int
		fmt.Sscanf(r[0], "t%d", &g0)
		for _, it := range r {
			var i int
			fmt.Sscanf(it, "t%d", &i)
			if i%3 != g0%3 {
				t.Errorf("request %v mixes groups", r)
			}
		}
	}
}

// TestBatchCancelWhileGathering: a task removed while its batch gathers
// leaves at once, with its buffer place, and is never sent.
func TestBatchCancelWhileGathering(t *testing.T) {
	svc := &batchService{}
	p := mustPool(t, Config{Parallelism: 1, Buffer: 10, Batch: &BatchConfig{Size: 10, Wait: time.Hour, Send: svc.send}})
	tasks := submitBatch(t, p, 2, noGroup, nil)
	for p.InFlight() != 2 || tasks[1].Status() != Waiting {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // both joined
	for _, task := range tasks {
		p.Remove(task)
		wait(t, task)
		if _, err := task.Result(); !errors.Is(err, ErrInterrupted) {
			t.Errorf("%v: error %v; want it interrupted", task.Key, err)
		}
	}
	if n := p.InFlight(); n != 0 {
		t.Errorf("places in flight after both left: %d; want 0", n)
	}
	if sizes := svc.sizes(); len(sizes) != 0 {
		t.Errorf("requests %v; want none", sizes)
	}
}

// TestBatchPanicFailsEveryItem: a Send that panics fails every item of its
// request with a PanicError.
func TestBatchPanicFailsEveryItem(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 10, Batch: &BatchConfig{Size: 3, Wait: 50 * time.Millisecond,
		Send: func(context.Context, []BatchItem) ([]Outcome, error) { panic("bad batch") }}})
	for _, task := range submitBatch(t, p, 3, noGroup, nil) {
		wait(t, task)
		var pe *PanicError
		if _, err := task.Result(); !errors.As(err, &pe) || pe.Value != "bad batch" {
			t.Errorf("%v: error %v; want the panic", task.Key, err)
		}
	}
}

// TestBatchWrongOutcomeCountFailsTheRequest: a Send that answers for fewer
// items than it was given fails them all, naming the mismatch.
func TestBatchWrongOutcomeCountFailsTheRequest(t *testing.T) {
	p := mustPool(t, Config{Parallelism: 1, Buffer: 10, Batch: &BatchConfig{Size: 3, Wait: 50 * time.Millisecond,
		Send: func(context.Context, []BatchItem) ([]Outcome, error) { return []Outcome{{}}, nil }}})
	for _, task := range submitBatch(t, p, 3, noGroup, nil) {
		wait(t, task)
		if _, err := task.Result(); err == nil || err.Error() != "state: a batch request of 3 items returned 1 outcomes" {
			t.Errorf("%v: error %v; want the count mismatch", task.Key, err)
		}
	}
}

func TestBatchConfigRejectsBadValues(t *testing.T) {
	send := func(context.Context, []BatchItem) ([]Outcome, error) { return nil, nil }
	for _, b := range []BatchConfig{{Size: 0, Send: send}, {Size: 2, Wait: -1, Send: send}, {Size: 2}} {
		if _, err := newPool(Config{Parallelism: 1, Buffer: 1, Batch: &b}); err == nil {
			t.Errorf("newPool with batch %+v: nil error; want one", b)
		}
	}
}

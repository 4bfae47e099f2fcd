package async_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// shakyLookup reports its progress, takes 5 ms, and fails some values:
// v%10 == 3 for good at once (Permanent), v%10 == 7 on every attempt, v%4
// == 1 on its first attempt only.
type shakyLookup struct{}

func (*shakyLookup) ProcessElement(ctx context.Context, key string, v int, emit func(string)) error {
	if err := async.ReportProgress(ctx, 0.5, ""); err != nil {
		return err
	}
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	switch {
	case v%10 == 3:
		return async.Permanent(errors.New("rejected"))
	case v%10 == 7:
		return errors.New("always down")
	case v%4 == 1 && async.Attempt(ctx) == 1:
		return errors.New("try again")
	}
	emit(fmt.Sprintf("%s:%d", key, v))
	return nil
}

// copyOf makes element v one of Copies records with equal key and value,
// v/Copies: under WithCache without a key function, a copy is a cache hit,
// or waits for the call of another copy in flight.
type copyOf struct{ Copies, Keys int }

func (f *copyOf) ProcessElement(_ string, v int) (string, int) { return keyed(v/f.Copies, f.Keys) }

func init() {
	register.DoFn4x1[context.Context, string, int, func(string), error](&shakyLookup{})
	register.DoFn2x2[string, int, string, int](&copyOf{})
}

// TestPipelineMetricsMatchEvents runs a transform whose calls fail, are
// retried and are answered from the cache, on prism, on bounded and on
// unbounded input, with a listener: each metric must equal the count of its
// events (see the table above MetricAccepted), and the counts must add up.
func TestPipelineMetricsMatchEvents(t *testing.T) {
	for _, unbounded := range []bool{false, true} {
		t.Run(fmt.Sprintf("unbounded=%v", unbounded), func(t *testing.T) {
			const n, copies, keys = 180, 3, 7
			path := filepath.Join(t.TempDir(), "events.jsonl")
			p, s := beam.NewPipelineWithRoot()
			s = s.Scope("matching")
			col := beam.ParDo(s, &copyOf{Copies: copies, Keys: keys}, inputOf(s, n, unbounded))
			out, failures := async.ParDoWithFailures(s, &shakyLookup{}, col,
				async.WithParallelism(8), async.WithCallbackFrequency(200*time.Millisecond),
				async.WithMaxAttempts(3), async.WithBackoff(async.FixedBackoff(10*time.Millisecond)),
				async.WithCache(async.Cache{Size: 100, TTL: time.Minute}),
				async.WithListener(&async.JSONLinesListener{Path: path}))
			var want []any
			wantFailed := 0
			for i := 0; i < n; i++ {
				k, v := keyed(i/copies, keys)
				if v%10 == 3 || v%10 == 7 {
					wantFailed++
					continue
				}
				want = append(want, fmt.Sprintf("%s:%d", k, v))
			}
			passert.Equals(s, out, want...)
			passert.Count(s, failures, "failures", wantFailed)
			res := ptest.RunAndValidate(t, p)
			got, _ := guardCounters(res, "matching/async.ParDoWithFailures")

			events, err := async.ReadEvents(path)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[async.EventType]int64{}
			for _, e := range events {
				seen[e.Type]++
			}
			t.Logf("events %v; metrics %v", seen, got)

			for _, c := range []struct {
				metric string
				events int64
			}{
				{async.MetricAccepted, seen[async.EventAccepted]},
				{async.MetricStarted, seen[async.EventStarted]},
				{async.MetricSucceeded, seen[async.EventSucceeded]},
				{async.MetricRetried, seen[async.EventRetrying]},
				{async.MetricFailed, seen[async.EventFailed]},
				{async.MetricCommitted, seen[async.EventCommitted]},
				{async.MetricFinished, seen[async.EventCommitted] + seen[async.EventFailed]},
				{async.MetricRescheduled, seen[async.EventRescheduled]},
				{async.MetricDeduplicated, seen[async.EventDeduplicated]},
				{async.MetricProgressReports, seen[async.EventProgress]},
				{async.MetricCalls, seen[async.EventStarted]},
				{async.MetricCacheMisses, seen[async.EventStarted]},
			} {
				if got[c.metric] != c.events {
					t.Errorf("metric %s = %d; want %d, its events", c.metric, got[c.metric], c.events)
				}
			}
			if dropped := got[async.MetricCancelled] + got[async.MetricEvicted]; dropped != seen[async.EventCancelled] {
				t.Errorf("metrics cancelled + evicted = %d; want %d, the cancelled events", dropped, seen[async.EventCancelled])
			}

			started, succeeded, retried, failed := got[async.MetricStarted], got[async.MetricSucceeded], got[async.MetricRetried], got[async.MetricFailed]
			committed, hits := got[async.MetricCommitted], got[async.MetricCacheHits]
			if started != succeeded+retried+failed {
				t.Errorf("started %d; want succeeded %d + retried %d + failed %d: every call ends one way", started, succeeded, retried, failed)
			}
			if committed != succeeded+hits {
				t.Errorf("committed %d; want succeeded %d + cache_hits %d: every output was called or hit", committed, succeeded, hits)
			}
			if got[async.MetricAccepted] != n || committed != int64(len(want)) || failed != int64(wantFailed) {
				t.Errorf("accepted %d, committed %d, failed %d; want %d, %d, %d", got[async.MetricAccepted], committed, failed, n, len(want), wantFailed)
			}
			if hits == 0 || retried == 0 {
				t.Errorf("cache_hits %d, retried %d; want some of each: the run did not test what it should", hits, retried)
			}
		})
	}
}

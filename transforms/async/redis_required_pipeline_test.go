package async_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/integration/redistest"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// TestPipelineRedisRequiredFailsFast: with Cache.RedisRequired, a worker
// that cannot read Redis's password, or cannot reach Redis, fails its
// bundle with the cause, and calls nothing; without it, the same job
// runs on the worker's own cache.
func TestPipelineRedisRequiredFailsFast(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Password: "right horse"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	unset := async.Cache{Size: 100, TTL: time.Minute, Redis: srv.Addr, Prefix: "test:" + uuid.NewString(),
		PasswordEnv: "ASYNCBEAM_TEST_REDIS_UNSET", RedisRequired: true}
	down := async.Cache{Size: 100, TTL: time.Minute, Redis: closed, Prefix: "test:" + uuid.NewString(), RedisRequired: true}
	for _, tc := range []struct {
		name  string
		cache async.Cache
		want  string
	}{
		{"password variable unset", unset, "environment variable ASYNCBEAM_TEST_REDIS_UNSET is not set on this worker"},
		{"Redis down", down, "Redis failed or did not answer in time (Redis at " + closed + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := startRefusingService(t, false)
			p, s := beam.NewPipelineWithRoot()
			col := beam.ParDo(s, lookupKeyed, inputOf(s, 30, false))
			async.Enrich(s, &profileService{URL: svc.URL, FailKey: -1}, col, joinProfile, async.WithCache(tc.cache))
			err := ptest.Run(p)
			if err == nil || !strings.Contains(err.Error(), "Cache.RedisRequired") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the job's error = %v; want one naming Cache.RedisRequired and %q", err, tc.want)
			}
			if got := callsMade(svc); got != 0 {
				t.Errorf("%d calls; want none", got)
			}
		})
	}
	t.Run("without it", func(t *testing.T) {
		c := unset
		c.RedisRequired = false
		svc := startRefusingService(t, false)
		counters := runEnriched(t, svc, 90, false, async.WithCache(c))
		if counters[async.MetricSharedCacheErrors] == 0 {
			t.Error("shared_cache_errors = 0; want the unread password counted")
		}
	})
}

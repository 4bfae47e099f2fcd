package async_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/integration/redistest"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// TestPipelineSharedCacheWithRedisPassword: the shared cache reaches a
// Redis with a password given by URL and environment variable (the
// worker's), and a wrong password makes every lookup a miss, counted, with
// every output still right.
func TestPipelineSharedCacheWithRedisPassword(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Password: "right horse"})
	t.Setenv("ASYNCBEAM_TEST_REDIS_PW", "right horse")
	t.Setenv("ASYNCBEAM_TEST_REDIS_WRONG", "wrong horse")
	const n = 90
	c := async.Cache{Size: 100, TTL: time.Minute, Redis: "redis://default@" + srv.Addr + "/1",
		PasswordEnv: "ASYNCBEAM_TEST_REDIS_PW", Prefix: "test:" + uuid.NewString()}
	svc := startRefusingService(t, false)
	runEnriched(t, svc, n, false, async.WithCache(c))
	first := callsMade(svc)
	counters := runEnriched(t, svc, n, false, async.WithCache(c))
	if got := callsMade(svc) - first; got != 0 {
		t.Errorf("second pipeline: %d calls; want 0, every lookup in Redis", got)
	}
	if got := counters[async.MetricSharedCacheErrors]; got != 0 {
		t.Errorf("shared_cache_errors = %d; want 0", got)
	}

	wrong := c
	wrong.PasswordEnv = "ASYNCBEAM_TEST_REDIS_WRONG"
	svc = startRefusingService(t, false)
	counters = runEnriched(t, svc, n, false, async.WithCache(wrong))
	if got := callsMade(svc); got < lookups {
		t.Errorf("wrong password: %d calls; want at least %d, one per lookup (Redis is a miss)", got, lookups)
	}
	if counters[async.MetricSharedCacheErrors] == 0 {
		t.Error("wrong password: shared_cache_errors = 0; want the refusals counted")
	}
}

func TestRedisOptionErrorsSayWhatToChange(t *testing.T) {
	tests := []struct {
		name string
		opt  async.Option
		want string
	}{
		{"cache URL with password", async.WithCache(async.Cache{Size: 1, TTL: time.Minute, Redis: "redis://:pw@h:1", Prefix: "p"}),
			"WithCache: the Redis URL carries a password, which would ship inside the pipeline graph"},
		{"cache password source without Redis", async.WithCache(async.Cache{Size: 1, TTL: time.Minute, PasswordEnv: "PW"}),
			"WithCache: the Redis address is empty"},
		{"cache both sources", async.WithCache(async.Cache{Size: 1, TTL: time.Minute, Redis: "h:1", Prefix: "p", PasswordEnv: "PW", PasswordFile: "/pw"}),
			"both set; keep one"},
		{"cache RedisRequired without Redis", async.WithCache(async.Cache{Size: 1, TTL: time.Minute, RedisRequired: true}),
			"WithCache: RedisRequired without Redis; give Cache.Redis, or drop RedisRequired"},
		{"rate URL with password", async.WithSharedRateLimit(async.SharedRateLimit{Redis: "rediss://app:pw@h:1", Key: "k", PerSecond: 1, Burst: 1}),
			"WithSharedRateLimit: the Redis URL carries a password"},
		{"rate bad scheme", async.WithSharedRateLimit(async.SharedRateLimit{Redis: "http://h:1", Key: "k", PerSecond: 1, Burst: 1}),
			`scheme "http" is not redis:// or rediss://`},
		{"rate CA without TLS", async.WithSharedRateLimit(async.SharedRateLimit{Redis: "redis://h:1", Key: "k", PerSecond: 1, Burst: 1, CAFile: "/ca.pem"}),
			"give a rediss:// URL, or drop CAFile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			col := beam.ParDo(s, &keyBy{Keys: 2}, beam.Create(s, 1, 2))
			_, err := async.TryParDo(s, &slowLabel{}, col, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("TryParDo error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

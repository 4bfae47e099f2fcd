// Package redistest gives tests the Redis servers they may use: the one
// integration/redis.sh starts on loopback and names in ASYNCBEAM_REDIS
// (Addr), or one of the test's own, with a password and TLS (Start).
// .ci/run starts the first, installs redis-server and sets CI, so there a
// missing server fails the test; elsewhere the test is skipped with the
// command that provides one.
package redistest

import (
	"os"
	"testing"
)

// Addr returns the Redis server's host:port, or fails or skips t (see the
// package comment).
func Addr(t testing.TB) string {
	t.Helper()
	if a := os.Getenv("ASYNCBEAM_REDIS"); a != "" {
		return a
	}
	if os.Getenv("CI") != "" {
		t.Fatal("ASYNCBEAM_REDIS is not set: .ci/run must start Redis (integration/redis.sh start)")
	}
	t.Skip(`needs Redis: eval "$(integration/redis.sh start)"`)
	return ""
}

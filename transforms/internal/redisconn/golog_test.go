package redisconn

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// outageChild, set in the environment, makes TestOutageLogsOneLine the
// child process whose stderr the test reads.
const outageChild = "ASYNCBEAM_REDISCONN_OUTAGE_CHILD"

// TestOutageLogsOneLine: a client of a Redis that is down, whose round
// trips each dial and fail, writes one line to stderr for the streak: the
// Reporter's, naming the cause; go-redis's own line per failed dial is not
// written. The lines are read from a child process's stderr, where
// go-redis's default logger writes.
func TestOutageLogsOneLine(t *testing.T) {
	if os.Getenv(outageChild) != "" {
		outage(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutageLogsOneLine$", "-test.count=1")
	cmd.Env = append(os.Environ(), outageChild+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the child process: %v\n%s", err, stderr.String())
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "Redis failed or did not answer") {
		t.Errorf("an outage of 5 round trips logged %d lines:\n%s\nwant 1, the Reporter's", len(lines), strings.Join(lines, "\n"))
	}
}

// outage is the child's part: 5 round trips to a closed port, each
// reported, logged to stderr.
func outage(t *testing.T) {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Addr: ln.Addr().String()}
	ln.Close()
	c, err := cfg.NewClient(250 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := &Reporter{What: "test", Fallback: "it falls back", Config: cfg}
	for range 5 {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			t.Fatal("PING of a closed port succeeded")
		}
		r.Failed(err)
	}
}

// TestGoRedisLines: go-redis's lines other than a failed dial are logged,
// marked as go-redis's, once per format until a round trip succeeds; a
// failed dial is left to the Reporter.
func TestGoRedisLines(t *testing.T) {
	var buf bytes.Buffer
	l := &goRedisLogger{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	ctx := context.Background()
	l.Printf(ctx, "redis: connection pool: failed to dial after %d attempts: %v", 1, errors.New("connection refused"))
	for range 3 {
		l.Printf(ctx, "redis: re-authentication failed: %v", errors.New("WRONGPASS"))
	}
	l.Printf(ctx, "Connection hook error: %v", errors.New("hook"))
	l.succeeded()
	l.Printf(ctx, "redis: re-authentication failed: %v", errors.New("WRONGPASS"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"go-redis: re-authentication failed: WRONGPASS", "go-redis: Connection hook error: hook", "go-redis: re-authentication failed: WRONGPASS"}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s\nwant %d", len(lines), buf.String(), len(want))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) || !strings.Contains(lines[i], "source=go-redis") || !strings.Contains(lines[i], "level=WARN") {
			t.Errorf("line %d %q: want %q, source=go-redis, level=WARN", i+1, lines[i], w)
		}
	}
}

// TestSuccessEndsGoRedisStreak: a Reporter's success ends the streak of
// the process's go-redis logger, whose lines are logged again.
func TestSuccessEndsGoRedisStreak(t *testing.T) {
	goRedisLog.Printf(context.Background(), "test line %d", 1)
	goRedisLog.mu.Lock()
	said := goRedisLog.said["test line %d"]
	goRedisLog.mu.Unlock()
	(&Reporter{}).Succeeded()
	if !said || goRedisLog.any.Load() {
		t.Errorf("said %v, still in a streak %v after a success; want true, false", said, goRedisLog.any.Load())
	}
}

// TestExplain: the error of a caller that fails rather than falls back
// names the cause as the Reporter's line would.
func TestExplain(t *testing.T) {
	r := &Reporter{Config: Config{Addr: "h:1", PasswordEnv: "PW"}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&SourceError{"the Redis password's environment variable PW is not set on this worker"}, "cannot connect to Redis at h:1: the Redis password's environment variable PW is not set"},
		{errors.New("dial tcp h:1: connect: connection refused"), "Redis failed or did not answer in time (Redis at h:1): dial tcp h:1: connect: connection refused"},
		{redis.ErrClosed, "(Redis at h:1): redis: client is closed"},
	} {
		got := r.Explain(tc.err)
		if got == nil || !strings.Contains(got.Error(), tc.want) || !errors.Is(got, tc.err) {
			t.Errorf("Explain(%v) = %v; want an error wrapping it, saying %q", tc.err, got, tc.want)
		}
	}
	if r.Explain(nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}

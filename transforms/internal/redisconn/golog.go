package redisconn

// go-redis's own log lines. go-redis logs through one logger per process
// (redis.SetLogger); left alone, it writes a line to stderr for every
// failed dial, so an outage logs as many lines as connections were tried,
// beside the one line of the Reporter. The first client made here gives
// go-redis goRedisLog instead, once per process.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// goRedisLog is go-redis's logger in a process that made a client here.
var goRedisLog = &goRedisLogger{}

var setGoRedisLog sync.Once

// routeGoRedisLog makes goRedisLog go-redis's logger, once per process.
// It replaces the logger of every go-redis client of the process, the
// program's own ones too: their lines go the same way.
func routeGoRedisLog() { setGoRedisLog.Do(func() { redis.SetLogger(goRedisLog) }) }

// goRedisLogger takes go-redis's log lines. A failed dial is not logged:
// the round trip that wanted the connection fails with the same error,
// which its Reporter logs, once per streak. Any other line is logged
// with slog, marked as go-redis's (the message starts "go-redis: ", the
// attribute source is "go-redis"), once per streak too: a line of the same
// format is logged again only after a round trip of a client made here
// succeeded (Reporter.Succeeded).
type goRedisLogger struct {
	// Logger takes the lines; nil means slog.Default().
	Logger *slog.Logger

	mu   sync.Mutex
	said map[string]bool // the formats logged in this streak
	any  atomic.Bool     // said is not empty
}

// Printf logs one line of go-redis (its internal Logging interface).
func (l *goRedisLogger) Printf(ctx context.Context, format string, v ...any) {
	if strings.Contains(format, "failed to dial") {
		return
	}
	l.mu.Lock()
	if l.said[format] {
		l.mu.Unlock()
		return
	}
	if l.said == nil {
		l.said = map[string]bool{}
	}
	l.said[format] = true
	l.any.Store(true)
	l.mu.Unlock()
	lg := l.Logger
	if lg == nil {
		lg = slog.Default()
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	lg.Log(ctx, slog.LevelWarn, "go-redis: "+msg+"; logged once until a round trip to Redis succeeds", "source", "go-redis")
}

// succeeded ends the streak: the next line of each format is logged.
func (l *goRedisLogger) succeeded() {
	if !l.any.Load() {
		return
	}
	l.mu.Lock()
	clear(l.said)
	l.any.Store(false)
	l.mu.Unlock()
}

package guard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/asyncbeam/asyncbeam/transforms/internal/redisconn"
)

// SharedRateConfig is a rate limit shared by every process that names the
// same bucket on the same Redis server. It holds no secret: it may travel
// in a pipeline's graph.
type SharedRateConfig struct {
	// Addr is the Redis server: host:port, or a URL,
	// redis://[user@]host[:port][/db] or rediss://... for TLS (with the
	// system's roots, or CAFile's). A URL with a password is refused: see
	// PasswordEnv.
	Addr string
	// PasswordEnv names the environment variable, or PasswordFile the
	// absolute path of the file, that holds Redis's password on each
	// process (one of them, or neither for a server without a password).
	// The process reads it for each new connection.
	PasswordEnv, PasswordFile string
	// CAFile, only with rediss://, is the absolute path on each process of
	// the PEM certificates that sign the server's, instead of the system's
	// roots.
	CAFile string
	// Key names the bucket; processes with the same Key share the rate.
	Key string
	// PerSecond and Burst are the bucket's rate and depth, for all
	// processes together.
	PerSecond float64
	Burst     int
	// Workers is how many processes to assume share the rate when Redis
	// cannot be reached before any contact (see SharedRate); zero means 1.
	Workers int
}

// Validate says what is wrong with c, if anything, and what to change. It
// does not read the password or the CA file: they are the workers'.
func (c SharedRateConfig) Validate() error {
	switch {
	case c.Addr == "":
		return errors.New("the Redis address is empty; give host:port or a redis:// or rediss:// URL")
	case c.Key == "":
		return errors.New("the bucket key is empty; name the bucket every worker shares")
	case !(c.PerSecond > 0) || math.IsInf(c.PerSecond, 0):
		return fmt.Errorf("the rate %v must be a number > 0", c.PerSecond)
	case c.Burst < 1:
		return fmt.Errorf("the burst %d must be >= 1", c.Burst)
	case c.Workers < 0:
		return fmt.Errorf("the workers %d must be >= 0", c.Workers)
	}
	return c.conn().Validate()
}

func (c SharedRateConfig) conn() redisconn.Config {
	return redisconn.Config{Addr: c.Addr, PasswordEnv: c.PasswordEnv, PasswordFile: c.PasswordFile, CAFile: c.CAFile}
}

// SharedRate is a token bucket kept in Redis (GCRA, one round trip per call):
// a script on the server reserves the next start time of the bucket, by the
// server's clock, and the caller sleeps until it. The same script records
// the process as a user of the bucket, so each process knows how many share
// it.
//
// When Redis cannot be reached (an error or no answer within 250 ms), the
// process falls back, for a second before it tries Redis again, to a local
// bucket of an even share: PerSecond divided by the number of processes
// seen using the bucket in the last 10 s (Config.Workers before any
// contact). Calls go on at about the shared rate as a whole; none is failed
// or held indefinitely because of Redis. A refused or unreadable password,
// or a failed TLS handshake, is such a failure. The first failure after a
// success is logged (slog), one line naming the cause (WRONGPASS, NOAUTH,
// the password's source); the next ones only counted (Errors).
type SharedRate struct {
	cfg      SharedRateConfig
	rdb      *redis.Client
	report   redisconn.Reporter
	id       string
	interval int64 // microseconds between calls
	errs     atomic.Int64

	mu        sync.Mutex
	workers   int
	downUntil time.Time
	local     *rate.Limiter
}

// reserve is the GCRA step, in microseconds by the server's clock: KEYS[1]
// holds the bucket's theoretical arrival time, KEYS[2] the users seen.
var reserve = redis.NewScript(`
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then tat = now end
local wait = tat - tolerance - now
if wait < 0 then wait = 0 end
local nxt = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.floor((nxt - now) / 1000) + 1000)
redis.call('ZADD', KEYS[2], now, ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 10000000)
redis.call('PEXPIRE', KEYS[2], 60000)
return {wait, redis.call('ZCARD', KEYS[2])}
`)

// NewSharedRate connects lazily: no call is made, and no password or CA
// file read, until the first Wait.
func NewSharedRate(cfg SharedRateConfig) (*SharedRate, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("shared rate: %w", err)
	}
	rdb, err := cfg.conn().NewClient(250 * time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("shared rate: %w", err)
	}
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	s := &SharedRate{
		cfg: cfg,
		rdb: rdb,
		report: redisconn.Reporter{What: "shared rate limit " + cfg.Key, Config: cfg.conn(),
			Fallback: "calls take this process's share of the rate while it fails, counted as errors (metric shared_rate_errors)"},
		id:       fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:])),
		interval: max(1, int64(math.Round(1e6/cfg.PerSecond))),
		workers:  max(cfg.Workers, 1),
	}
	return s, nil
}

// Wait reserves the next start in the shared bucket and sleeps until it.
func (s *SharedRate) Wait(ctx context.Context) error {
	if l := s.fallback(time.Now()); l != nil {
		return l.Wait(ctx)
	}
	rctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	res, err := reserve.Run(rctx, s.rdb, []string{s.cfg.Key, s.cfg.Key + ":users"},
		s.interval, s.interval*int64(s.cfg.Burst-1), s.id).Int64Slice()
	cancel()
	if err != nil || len(res) != 2 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.errs.Add(1)
		if err == nil {
			err = fmt.Errorf("the rate script answered %d values, not 2", len(res))
		}
		s.report.Failed(err)
		return s.down(time.Now()).Wait(ctx)
	}
	s.report.Succeeded()
	s.mu.Lock()
	s.workers = max(int(res[1]), 1)
	s.mu.Unlock()
	if err := sleep(ctx, time.Duration(res[0])*time.Microsecond); err != nil {
		s.refund()
		return err
	}
	return nil
}

// refund gives back a reservation its caller did not use (its context
// ended while it waited), so that cancelled calls do not spend the rate of
// every worker: the bucket moves back one interval if it is still ahead.
func (s *SharedRate) refund() {
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	giveBack.Run(ctx, s.rdb, []string{s.cfg.Key}, s.interval)
}

// giveBack moves the bucket's theoretical arrival time back one interval,
// never behind the server's clock.
var giveBack = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat and tat - tonumber(ARGV[1]) >= now then
  redis.call('SET', KEYS[1], string.format('%.0f', tat - tonumber(ARGV[1])), 'KEEPTTL')
end
return 0
`)

// fallback returns the local bucket while Redis counts as down, else nil.
func (s *SharedRate) fallback(now time.Time) *rate.Limiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Before(s.downUntil) {
		return s.local
	}
	return nil
}

// down marks Redis unreachable for a second and returns the local bucket of
// this process's share.
func (s *SharedRate) down(now time.Time) *rate.Limiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Before(s.downUntil) {
		return s.local
	}
	share := s.cfg.PerSecond / float64(s.workers)
	burst := max(1, s.cfg.Burst/s.workers)
	if s.local == nil {
		s.local = rate.NewLimiter(rate.Limit(share), burst)
	} else {
		s.local.SetLimit(rate.Limit(share))
		s.local.SetBurst(burst)
	}
	s.downUntil = now.Add(time.Second)
	return s.local
}

// Errors returns how many calls found Redis unreachable.
func (s *SharedRate) Errors() int64 { return s.errs.Load() }

// Workers returns how many processes were last seen sharing the bucket.
func (s *SharedRate) Workers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workers
}

// Close closes the connection to Redis.
func (s *SharedRate) Close() error { return s.rdb.Close() }

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

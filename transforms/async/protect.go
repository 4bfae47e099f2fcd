package async

// Protecting the called service: the options that put a rate limit, an
// adaptive concurrency limit and a retry budget in front of the calls, the
// overload marker. The gate that wires the Beam-free policies of
// transforms/guard into the transform's pool is in internal/worker/gate.go.
//
// Every attempt passes one Gate per transform and worker process (the
// pool's, state.Config.Gate) in its parallelism slot, before its call
// (and so before WithCallTimeout's deadline starts): the retry budget (for
// retries of overloaded attempts), the overload throttle, then the rate.
// The adaptive limit is the number of slots itself: the pool resizes them
// after each attempt. The throttle and the retry budget are always on: they
// do nothing until the service answers with overload (Overloaded errors).

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/guard"
)

// Overloaded marks err as the service saying "too much" (HTTP 429 or 503, a
// quota, a full queue): the attempt fails with kind "overloaded", and
// besides the element's own retry the whole pool may slow down: once the
// service refuses more than WithOverloadThreshold's share of what a worker
// sends, the worker's throttle paces attempts so that it sends at most
// 1/(1 - that share) times what the service accepts (client-side adaptive
// throttling, guard.Throttle); an adaptive limit shrinks; and retries of
// overloaded attempts spend the retry budget (WithRetryBudget).
// Overloaded(nil) is nil.
func Overloaded(err error) error { return guard.Overloaded(err, 0) }

// OverloadedRetryAfter is Overloaded for a service that said how long to
// wait: the element's next attempt waits at least retryAfter (at most
// 5 minutes of it), whatever its backoff says.
func OverloadedRetryAfter(err error, retryAfter time.Duration) error {
	return guard.Overloaded(err, retryAfter)
}

// CheckResponse turns an HTTP response into the error a wrapped fn should
// return: nil for 2xx; an overload (with the Retry-After header's wait,
// in seconds or as a date) for 429 and 503; Permanent for other 4xx but 408,
// which no retry can fix; a plain error otherwise.
//
// The error ends with the start of the response's body, what the service
// said ("400 Bad Request: unknown sku"): at most 512 bytes, whitespace
// folded, marked with "…" when cut. To get them it reads from resp.Body
// (waiting for them, for the body's end or for the request's context) and
// puts them back: resp.Body still reads the whole body from its start. It
// never closes the body, and reads none of it for 2xx: the caller closes
// it, as always (a defer resp.Body.Close() made before or after the call
// closes the same connection). Mind what the service echoes in its errors:
// the text goes wherever the error goes (logs, failure records).
func CheckResponse(resp *http.Response) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	status := resp.Status
	if said := bodyExcerpt(resp); said != "" {
		status += ": " + said
	}
	err := fmt.Errorf("HTTP %s", status)
	if r := resp.Request; r != nil && r.URL != nil {
		err = fmt.Errorf("%s %s: %s", r.Method, r.URL.Redacted(), status)
	}
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return guard.Overloaded(err, retryAfter(resp.Header.Get("Retry-After"), time.Now()))
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout:
		return Permanent(err)
	}
	return err
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// WithRateLimit caps how many calls a worker process starts per second for
// this transform, first attempts and retries alike: perSecond on average,
// up to burst at once (a token bucket, golang.org/x/time/rate). A call
// waiting for the rate holds its parallelism slot. Both must be > 0.
// Default: none.
func WithRateLimit(perSecond float64, burst int) Option {
	return func(s *settings) {
		if !(perSecond > 0) || math.IsInf(perSecond, 0) || burst < 1 {
			s.errs = append(s.errs, fmt.Errorf("WithRateLimit(%v, %d): want a rate > 0 per second and a burst >= 1", perSecond, burst))
			return
		}
		s.protect.RatePerSecond, s.protect.RateBurst = perSecond, burst
	}
}

// SharedRateLimit is a rate limit for all workers together, kept in Redis.
type SharedRateLimit struct {
	// Redis is the server, which every worker must reach: host:port, or a
	// URL, redis://[user@]host[:port][/db] or rediss://... for TLS.
	Redis string
	// PasswordEnv names the environment variable, or PasswordFile the
	// absolute path of the file, that holds Redis's password on each
	// worker: one of them, or neither for a server without a password. The
	// options travel inside the pipeline graph, so a password in the URL
	// is refused; these name where the worker reads it, for each new
	// connection. A refused or unreadable password is a Redis that cannot
	// be reached (see WithSharedRateLimit), logged once, naming the cause.
	PasswordEnv, PasswordFile string
	// CAFile, only with rediss://, is the absolute path on each worker of
	// the PEM certificates that sign Redis's, instead of the system's roots.
	CAFile string
	// Key names the bucket: every transform and pipeline that gives the
	// same Key on the same server shares the rate (one per service called).
	Key string
	// PerSecond and Burst are the rate and the burst of all workers
	// together.
	PerSecond float64
	Burst     int
	// Workers is the number of workers to assume share the rate if Redis
	// cannot be reached before any worker has talked to it. Zero means 1.
	Workers int
}

// WithSharedRateLimit caps the calls started per second by all workers of
// all pipelines that name the same bucket: a GCRA token bucket in Redis, one
// round trip per call. When Redis cannot be reached (no answer within
// 250 ms), a worker falls back for a second at a time to a local bucket of
// an even share: the rate divided by the number of users seen using the
// bucket in the last 10 s (each transform in each worker process is one;
// Workers before any contact). Calls go on at about
// the shared rate; none fails because of Redis. The metric
// MetricSharedRateErrors counts the calls that found Redis unreachable.
// Default: none.
func WithSharedRateLimit(l SharedRateLimit) Option {
	return func(s *settings) {
		cfg := guard.SharedRateConfig{Addr: l.Redis, Key: l.Key, PerSecond: l.PerSecond, Burst: l.Burst, Workers: l.Workers,
			PasswordEnv: l.PasswordEnv, PasswordFile: l.PasswordFile, CAFile: l.CAFile}
		if err := cfg.Validate(); err != nil {
			s.errs = append(s.errs, fmt.Errorf("WithSharedRateLimit: %w", err))
			return
		}
		s.protect.Shared = &cfg
	}
}

// WithAdaptiveParallelism lets the number of calls running at once move
// between min and max from what the service shows (see guard.Adaptive): it
// grows while latency stays near the lowest seen, shrinks when latency
// grows (calls queue at the service), and shrinks to 0.8 of itself on
// overload answers and timeouts. It starts at min. It replaces
// WithParallelism: the pool has max slots, of which the limit uses some.
// Want 1 <= min <= max. Default: none (WithParallelism's fixed number).
func WithAdaptiveParallelism(min, max int) Option {
	return func(s *settings) {
		if min < 1 || max < min {
			s.errs = append(s.errs, fmt.Errorf("WithAdaptiveParallelism(%d, %d): want 1 <= min <= max", min, max))
			return
		}
		s.protect.AdaptiveMin, s.protect.AdaptiveMax = min, max
	}
}

// WithRetryBudget bounds the retries of attempts answered with overload, per
// worker, while the service refuses more than share/2 of the attempts
// answered in the last 2 s: then, over the last 10 s, such retries may
// number share of the first attempts, plus guard.DefaultBudgetFloor (10) a
// second. A retry without budget is not dropped: it waits, holding no slot,
// until the budget has one. While the service refuses less, retries go on
// (and still count in the window). So retries add at most share of the first
// attempts, plus the floor, while the budget binds; not over a whole run.
// The worker's throttle has its own
// threshold (WithOverloadThreshold). Retries after other errors are not
// budgeted. Must be >= 0. Default: guard.DefaultBudgetShare (0.1).
func WithRetryBudget(share float64) Option {
	return func(s *settings) {
		if !(share >= 0) || math.IsInf(share, 0) {
			s.errs = append(s.errs, fmt.Errorf("WithRetryBudget(%v): want a share >= 0", share))
			return
		}
		s.protect.BudgetShare = share
	}
}

// WithOverloadThreshold sets the share of a worker's attempts that the
// service may refuse with overload (Overloaded), over the last 10 s
// (guard.ThrottleWindow), before the worker's throttle paces every attempt
// of the transform to 1/(1 - share) times what the service accepted over the
// last 2 s (1.25 times at the default); the pace ends once the service
// accepts what it is sent again. Set it above the share a healthy service
// refuses whatever the load (a flaky backend, a load balancer shedding a
// little): such a service accepts a share of what it gets, not a rate, and
// a pace set from what it accepts would shrink at every turn, down to an
// attempt a second. Lower protects an overloaded service sooner and sends
// it fewer refused attempts. While the throttle paces, the service keeps
// refusing about share of what it is sent, above the half of
// WithRetryBudget's share at which the budget binds: retries of refused
// attempts then wait for the budget (raise it with the threshold if they
// should not). Must be in (0, 1). Default: DefaultOverloadThreshold (0.2).
func WithOverloadThreshold(share float64) Option {
	return func(s *settings) {
		if !(share > 0 && share < 1) {
			s.errs = append(s.errs, fmt.Errorf("WithOverloadThreshold(%v): want a share of refused attempts between 0 and 1, such as 0.2", share))
			return
		}
		s.protect.OverloadThreshold = share
	}
}

// resolveProtection checks the combination with the other settings: adaptive
// parallelism sets the pool's slots to its maximum.
func resolveProtection(p *terms.Protection, s *settings) {
	if p.AdaptiveMax == 0 {
		return
	}
	if s.parallelismSet && s.parallelism != p.AdaptiveMax {
		s.errs = append(s.errs, fmt.Errorf("WithParallelism(%d) and WithAdaptiveParallelism(%d, %d) both set the calls at once: keep one", s.parallelism, p.AdaptiveMin, p.AdaptiveMax))
		return
	}
	s.parallelism = p.AdaptiveMax
}

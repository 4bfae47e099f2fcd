package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Reporter logs the failures of one client of Redis: one line at the first
// failure after a success (or after it was made), naming the cause and
// where the password was read; nothing more until a round trip succeeds.
// Its callers count every failure themselves. It is safe for concurrent
// use; it must not be copied after first use.
type Reporter struct {
	// What starts the line: the user of Redis, such as "shared cache".
	What string
	// Fallback says what happens while Redis fails.
	Fallback string
	// Config is the client's; the line names its address and password
	// source.
	Config Config
	// Logger takes the line; nil means slog.Default().
	Logger *slog.Logger

	failing atomic.Bool
}

// Failed reports a failed round trip.
func (r *Reporter) Failed(err error) {
	if err == nil || r.failing.Swap(true) {
		return
	}
	level, cause := r.cause(err)
	l := r.Logger
	if l == nil {
		l = slog.Default()
	}
	l.Log(context.Background(), level,
		fmt.Sprintf("asyncbeam: %s: %s; %s; logged once until a round trip succeeds", r.What, cause, r.Fallback),
		"redis", r.Config.Addr, "err", err.Error())
}

// Succeeded reports a round trip that succeeded: the next failure is
// logged, and go-redis's next lines (goRedisLogger).
func (r *Reporter) Succeeded() {
	if r.failing.Load() {
		r.failing.Store(false)
	}
	goRedisLog.succeeded()
}

// Explain returns err, of a round trip of the Reporter's client, with the
// cause the Reporter's line would name: for a caller that fails rather
// than falls back.
func (r *Reporter) Explain(err error) error {
	if err == nil {
		return nil
	}
	var se *SourceError
	if errors.As(err, &se) {
		return fmt.Errorf("cannot connect to Redis at %s: %w", r.Config.Addr, err)
	}
	_, cause := r.cause(err)
	return fmt.Errorf("%s (Redis at %s): %w", cause, r.Config.Addr, err)
}

// cause is what err says about the configuration, and how loudly to say
// it: a refused password is an error of the pipeline's configuration, an
// outage a warning.
func (r *Reporter) cause(err error) (slog.Level, string) {
	src := r.Config.Source()
	var se *SourceError
	switch {
	case errors.As(err, &se):
		return slog.LevelError, "cannot connect to Redis: " + se.msg
	case redis.IsAuthError(err) && src == "":
		return slog.LevelError, "Redis wants a password (NOAUTH) and none is configured; set PasswordEnv or PasswordFile"
	case redis.IsAuthError(err) || redis.HasErrorPrefix(err, "AUTH"):
		creds := "the password read from " + src
		if u := r.Config.user(); u != "" {
			creds = fmt.Sprintf("user %s with %s", u, creds)
		}
		return slog.LevelError, "Redis refused " + creds + "; correct it there"
	case redis.IsPermissionError(err):
		return slog.LevelError, "Redis refused a command to the URL's user (NOPERM); grant the user GET, SET, PTTL, EVAL and EVALSHA on the keys"
	case isTLS(err):
		return slog.LevelError, "the TLS connection to Redis failed; check the rediss:// host name and CAFile"
	}
	return slog.LevelWarn, "Redis failed or did not answer in time"
}

// isTLS reports whether err is a failed TLS handshake or certificate.
func isTLS(err error) bool {
	var (
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		header  tls.RecordHeaderError
		alert   tls.AlertError
	)
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &header) || errors.As(err, &alert)
}

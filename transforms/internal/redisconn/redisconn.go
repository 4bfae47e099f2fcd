// Package redisconn is how the shared cache (transforms/cache) and the
// shared rate limit (transforms/guard) reach Redis: the address as
// host:port or as a redis:// or rediss:// URL, a password read on the
// worker from an environment variable or a file, TLS, and one log line per
// streak of failures (Reporter), go-redis's own lines included: go-redis
// logs through slog once a client is made here, its lines marked
// source=go-redis, and a failed dial only through the Reporter of the
// round trip that failed.
//
// A Config travels inside the pipeline graph as JSON, so it never holds a
// password: Validate refuses a URL that carries one, and the worker reads
// the password from the source the Config names each time it opens a
// connection (a rotated file is read on the next connection).
package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is where a Redis server is and where a worker finds its password.
type Config struct {
	// Addr is host:port, or a URL: redis://[user@]host[:port][/db], or
	// rediss://... for TLS with the system's roots (or CAFile's). The port
	// defaults to 6379 and the database to 0. A URL with a password, query
	// parameters or a fragment is refused.
	Addr string
	// PasswordEnv is the name of the environment variable that holds the
	// password on each worker; PasswordFile the absolute path of a file on
	// each worker that holds it (one trailing newline is ignored). Set one,
	// or neither for a server without a password.
	PasswordEnv, PasswordFile string
	// CAFile, only with rediss://, is the absolute path on each worker of
	// the PEM certificates that sign the server's certificate, in place of
	// the system's roots.
	CAFile string
}

// envName is what a POSIX shell accepts as a variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate says what is wrong with c, if anything, and what to change. It
// reads nothing on this machine: the password and the CA file are the
// workers'.
func (c Config) Validate() error {
	o, err := c.options()
	if err != nil {
		return err
	}
	switch {
	case c.PasswordEnv != "" && c.PasswordFile != "":
		return errors.New("PasswordEnv and PasswordFile are both set; keep one")
	case c.PasswordEnv != "" && !envName.MatchString(c.PasswordEnv):
		return errors.New("PasswordEnv is not an environment variable name (letters, digits, _); give the variable's name, not the password")
	case c.PasswordFile != "" && !filepath.IsAbs(c.PasswordFile):
		return fmt.Errorf("PasswordFile %q is not an absolute path; give the file's absolute path on the workers", c.PasswordFile)
	case c.CAFile != "" && !filepath.IsAbs(c.CAFile):
		return fmt.Errorf("CAFile %q is not an absolute path; give the file's absolute path on the workers", c.CAFile)
	case c.CAFile != "" && o.TLSConfig == nil:
		return errors.New("CAFile is set but the address does not use TLS; give a rediss:// URL, or drop CAFile")
	case o.Username != "" && c.PasswordEnv == "" && c.PasswordFile == "":
		return fmt.Errorf("the Redis URL names the user %q but no password; set PasswordEnv or PasswordFile", o.Username)
	}
	return nil
}

// options parses the address; the errors say what to change and never
// show a password.
func (c Config) options() (*redis.Options, error) {
	addr := c.Addr
	if addr == "" {
		return nil, errors.New("the Redis address is empty; give host:port or a redis:// or rediss:// URL")
	}
	if !strings.Contains(addr, "://") {
		host, port, err := net.SplitHostPort(addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || host == "" || n < 1 || n > 65535 || strings.Contains(addr, "@") {
			return nil, fmt.Errorf("the Redis address %s is not host:port; give host:port or a redis:// or rediss:// URL", shown(addr))
		}
		return &redis.Options{Addr: addr}, nil
	}
	u, err := url.Parse(addr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the whole URL, password and all
		}
		return nil, fmt.Errorf("the Redis URL %s does not parse (%v); give redis://[user@]host:port[/db]", shown(addr), err)
	}
	switch {
	case u.Scheme != "redis" && u.Scheme != "rediss":
		return nil, fmt.Errorf("the Redis URL scheme %q is not redis:// or rediss:// (TLS); use one of those, or host:port", u.Scheme)
	case u.User != nil && hasPassword(u.User):
		return nil, errors.New("the Redis URL carries a password, which would ship inside the pipeline graph; " +
			"remove it from the URL and name where the workers read it: PasswordEnv (an environment variable) or PasswordFile (a file)")
	case u.Hostname() == "":
		return nil, fmt.Errorf("the Redis URL %s has no host; give %s://host:port", safeURL(u), u.Scheme)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("the Redis URL %s has a query or a fragment, which is not read here; remove it (the timeouts are fixed)", safeURL(u))
	}
	o, err := redis.ParseURL(addr)
	if err != nil {
		return nil, fmt.Errorf("the Redis URL %s: %v; give %s://[user@]host:port[/db]", safeURL(u), err, u.Scheme)
	}
	if o.DB < 0 {
		return nil, fmt.Errorf("the Redis URL %s names database %d; give a number >= 0", safeURL(u), o.DB)
	}
	return o, nil
}

func hasPassword(u *url.Userinfo) bool { _, ok := u.Password(); return ok }

// shown is addr for an error message, without its query or fragment (a
// password can hide there), unless it may hold credentials.
func shown(addr string) string {
	if strings.Contains(addr, "@") {
		return "(not shown: it has an @)"
	}
	if i := strings.IndexAny(addr, "?#"); i >= 0 {
		addr = addr[:i] + "?..."
	}
	return fmt.Sprintf("%q", addr)
}

// safeURL is u for an error message: its scheme, user name, host, port and
// path (the database), never its password, query or fragment.
func safeURL(u *url.URL) string {
	s := u.Scheme + "://"
	if u.User != nil {
		s += u.User.Username() + "@"
	}
	return s + u.Host + u.EscapedPath()
}

// NewClient makes a client of c's server (it connects lazily) whose every
// dial, read and write takes at most timeout, and that never retries a
// command: the callers have their own fallbacks. Each new connection reads
// the password from its source; a source that cannot be read fails that
// connection with a SourceError. The first client made in a process routes
// go-redis's own log lines (a process-wide logger) through slog, once per
// streak of failures (goRedisLogger).
func (c Config) NewClient(timeout time.Duration) (*redis.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	o, _ := c.options()
	routeGoRedisLog()
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
	o.MaxRetries, o.DialerRetries = -1, 1
	if c.PasswordEnv != "" || c.PasswordFile != "" {
		user := o.Username
		o.CredentialsProviderContext = func(context.Context) (string, string, error) {
			pw, err := c.password()
			return user, pw, err
		}
	}
	if o.TLSConfig != nil && c.CAFile != "" {
		base := o.TLSConfig
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			roots, err := c.roots()
			if err != nil {
				return nil, err
			}
			cfg := base.Clone()
			cfg.RootCAs = roots
			d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
			return d.DialContext(ctx, network, addr)
		}
	}
	return redis.NewClient(o), nil
}

// SourceError is a password or CA file that a worker could not read.
type SourceError struct{ msg string }

func (e *SourceError) Error() string { return e.msg }

// Source names where the worker reads the password, for messages: "" for
// no password.
func (c Config) Source() string {
	switch {
	case c.PasswordEnv != "":
		return "environment variable " + c.PasswordEnv
	case c.PasswordFile != "":
		return "file " + c.PasswordFile
	}
	return ""
}

// user is the URL's user, if any.
func (c Config) user() string {
	if o, err := c.options(); err == nil {
		return o.Username
	}
	return ""
}

// password reads the password from its source.
func (c Config) password() (string, error) {
	if c.PasswordEnv != "" {
		pw, ok := os.LookupEnv(c.PasswordEnv)
		switch {
		case !ok:
			return "", &SourceError{fmt.Sprintf("the Redis password's environment variable %s is not set on this worker", c.PasswordEnv)}
		case pw == "":
			return "", &SourceError{fmt.Sprintf("the Redis password's environment variable %s is empty on this worker", c.PasswordEnv)}
		}
		return pw, nil
	}
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", &SourceError{fmt.Sprintf("cannot read the Redis password: %v", err)}
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" {
		return "", &SourceError{fmt.Sprintf("the Redis password's file %s is empty", c.PasswordFile)}
	}
	return pw, nil
}

// roots reads CAFile.
func (c Config) roots() (*x509.CertPool, error) {
	b, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, &SourceError{fmt.Sprintf("cannot read the Redis CA file: %v", err)}
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return nil, &SourceError{fmt.Sprintf("the Redis CA file %s holds no PEM certificate", c.CAFile)}
	}
	return p, nil
}

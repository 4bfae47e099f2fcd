package redisconn

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestURLs(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		addr string // the client's host:port; "" when refused
		user string
		db   int
		tls  bool
		err  string // in the error when refused
	}{
		{cfg: Config{Addr: "127.0.0.1:6379"}, addr: "127.0.0.1:6379"},
		{cfg: Config{Addr: "[::1]:6380"}, addr: "[::1]:6380"},
		{cfg: Config{Addr: "redis://cache.internal"}, addr: "cache.internal:6379"},
		{cfg: Config{Addr: "redis://cache.internal:6380/3"}, addr: "cache.internal:6380", db: 3},
		{cfg: Config{Addr: "REDIS://cache.internal:6380"}, addr: "cache.internal:6380"},
		{cfg: Config{Addr: "rediss://cache.internal:6380"}, addr: "cache.internal:6380", tls: true},
		{cfg: Config{Addr: "rediss://app@cache.internal:6380/1", PasswordEnv: "REDIS_PASSWORD"}, addr: "cache.internal:6380", user: "app", db: 1, tls: true},
		{cfg: Config{Addr: "rediss://h:1", CAFile: "/etc/ca.pem", PasswordFile: "/run/secrets/redis"}, addr: "h:1", tls: true},

		{cfg: Config{}, err: "address is empty"},
		{cfg: Config{Addr: "cache.internal"}, err: "is not host:port"},
		{cfg: Config{Addr: ":6379"}, err: "is not host:port"},
		{cfg: Config{Addr: "h:6379/2"}, err: "is not host:port"},
		{cfg: Config{Addr: "h:70000"}, err: "is not host:port"},
		{cfg: Config{Addr: "app:secret@h:1"}, err: "is not host:port"},
		{cfg: Config{Addr: "redis://:secret@h:1"}, err: "carries a password"},
		{cfg: Config{Addr: "redis://app:secret@h:1"}, err: "carries a password"},
		{cfg: Config{Addr: "redis://app:@h:1"}, err: "carries a password"},
		{cfg: Config{Addr: "http://h:1"}, err: `scheme "http" is not redis:// or rediss://`},
		{cfg: Config{Addr: "unix:///run/redis.sock"}, err: `scheme "unix"`},
		{cfg: Config{Addr: "redis://:6379"}, err: "has no host"},
		{cfg: Config{Addr: "redis://h:1?dial_timeout=10s"}, err: "has a query"},
		{cfg: Config{Addr: "rediss://h:6380/0?password=secret"}, err: "rediss://h:6380/0 has a query"},
		{cfg: Config{Addr: "redis://app@h:1/2?password=secret#secret"}, err: "redis://app@h:1/2 has a query"},
		{cfg: Config{Addr: "redis://h:1/x?password=secret"}, err: "redis://h:1/x has a query"},
		{cfg: Config{Addr: "redis://h:1%zz?password=secret"}, err: "does not parse"},
		{cfg: Config{Addr: "redis://h:1/x"}, err: "invalid database number"},
		{cfg: Config{Addr: "redis://h:1/-1"}, err: "give a number >= 0"},
		{cfg: Config{Addr: "redis://h:1/1/2"}, err: "invalid URL path"},
		{cfg: Config{Addr: "redis://app@h:1"}, err: `names the user "app" but no password; set PasswordEnv or PasswordFile`},
		{cfg: Config{Addr: "h:1", PasswordEnv: "A", PasswordFile: "/b"}, err: "both set; keep one"},
		{cfg: Config{Addr: "h:1", PasswordEnv: "s3cr=t!"}, err: "not an environment variable name"},
		{cfg: Config{Addr: "h:1", PasswordFile: "run/redis-pw"}, err: "not an absolute path"},
		{cfg: Config{Addr: "h:1", CAFile: "/etc/ca.pem"}, err: "does not use TLS; give a rediss:// URL"},
		{cfg: Config{Addr: "rediss://h:1", CAFile: "ca.pem"}, err: "not an absolute path"},
	} {
		c, err := tc.cfg.NewClient(0)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: got error %v; want one saying %q", tc.cfg, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%+v: the error %q shows the password", tc.cfg, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: got error %v; want none", tc.cfg, err)
			continue
		}
		o := c.Options()
		if o.Addr != tc.addr || o.DB != tc.db || (o.TLSConfig != nil) != tc.tls {
			t.Errorf("%+v: got addr %s, db %d, TLS %v; want %s, %d, %v", tc.cfg, o.Addr, o.DB, o.TLSConfig != nil, tc.addr, tc.db, tc.tls)
		}
		var user string
		if o.CredentialsProviderContext != nil {
			user, _, _ = o.CredentialsProviderContext(t.Context())
		}
		if user != tc.user {
			t.Errorf("%+v: got user %q; want %q", tc.cfg, user, tc.user)
		}
		c.Close()
	}
}

func TestPasswordSources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("REDISCONN_TEST_PW", "from env")
	t.Setenv("REDISCONN_TEST_EMPTY", "")
	for _, tc := range []struct {
		cfg  Config
		want string // the password; "" for an error
		err  string
	}{
		{cfg: Config{PasswordEnv: "REDISCONN_TEST_PW"}, want: "from env"},
		{cfg: Config{PasswordEnv: "REDISCONN_TEST_UNSET"}, err: "environment variable REDISCONN_TEST_UNSET is not set on this worker"},
		{cfg: Config{PasswordEnv: "REDISCONN_TEST_EMPTY"}, err: "environment variable REDISCONN_TEST_EMPTY is empty"},
		{cfg: Config{PasswordFile: write("nl", "from file\n")}, want: "from file"},
		{cfg: Config{PasswordFile: write("crlf", "from file\r\n")}, want: "from file"},
		{cfg: Config{PasswordFile: write("bare", " spaced ")}, want: " spaced "},
		{cfg: Config{PasswordFile: write("empty", "\n")}, err: "is empty"},
		{cfg: Config{PasswordFile: filepath.Join(dir, "missing")}, err: "no such file"},
	} {
		got, err := tc.cfg.password()
		var se *SourceError
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%+v: got %q, %v; want %q", tc.cfg, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &se)):
			t.Errorf("%+v: got %q, %v; want a SourceError saying %q", tc.cfg, got, err, tc.err)
		}
	}
}

func TestReporterLogsOncePerStreak(t *testing.T) {
	var buf bytes.Buffer
	r := &Reporter{What: "test", Fallback: "it falls back", Config: Config{Addr: "h:1", PasswordEnv: "PW"},
		Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	unset := &SourceError{"the Redis password: environment variable PW is not set on this worker"}
	for range 3 {
		r.Failed(unset)
	}
	r.Succeeded()
	r.Failed(errors.New("dial tcp: connection refused"))
	r.Failed(errors.New("dial tcp: connection refused"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines:\n%s\nwant 2, one per streak of failures", len(lines), buf.String())
	}
	for i, want := range []string{"level=ERROR", "environment variable PW is not set", "it falls back"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line 1 %q: want %q in it (%d)", lines[0], want, i)
		}
	}
	for _, want := range []string{"level=WARN", "did not answer", "connection refused"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("line 2 %q: want %q in it", lines[1], want)
		}
	}
}

package guard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/asyncbeam/asyncbeam/integration/redistest"
)

// logTo sends r's log lines to Logs the test reads.
func logTo(r *SharedRate) *redistest.Logs {
	logs, logger := redistest.NewLogs()
	r.report.Logger = logger
	return logs
}

func TestSharedRateWithRedisPassword(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Password: "right horse", TLS: true})
	t.Setenv("ASYNCBEAM_TEST_REDIS_PW", "right horse")
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte("right horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  SharedRateConfig
	}{
		{"host:port, env", SharedRateConfig{Addr: srv.Addr, PasswordEnv: "ASYNCBEAM_TEST_REDIS_PW"}},
		{"redis:// with db, file", SharedRateConfig{Addr: "redis://" + srv.Addr + "/1", PasswordFile: file}},
		{"rediss:// with a CA file", SharedRateConfig{Addr: "rediss://" + srv.TLSAddr, PasswordFile: file, CAFile: srv.CAFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Key, cfg.PerSecond, cfg.Burst = "test:"+uuid.NewString(), 100, 2
			r, err := NewSharedRate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			logs := logTo(r)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for i := 0; i < 2; i++ { // the burst
				if err := r.Wait(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.Errors(); got != 0 {
				t.Errorf("Errors() = %d; want 0: the token came from Redis", got)
			}
			if got := r.Workers(); got != 1 {
				t.Errorf("Workers() = %d; want 1, as Redis counted the users", got)
			}
			if l := logs.Lines(); len(l) != 0 {
				t.Errorf("log lines %q; want none", l)
			}
		})
	}
}

func TestSharedRateRefusedPasswordFallsBackLoggedOnce(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Password: "right horse"})
	t.Setenv("ASYNCBEAM_TEST_REDIS_WRONG", "wrong horse")
	for _, tc := range []struct {
		name string
		cfg  SharedRateConfig
		want []string // in the one log line
	}{
		{"wrong password", SharedRateConfig{Addr: srv.Addr, PasswordEnv: "ASYNCBEAM_TEST_REDIS_WRONG"},
			[]string{"WRONGPASS", "Redis refused the password read from environment variable ASYNCBEAM_TEST_REDIS_WRONG", "share of the rate"}},
		{"no password", SharedRateConfig{Addr: "redis://" + srv.Addr},
			[]string{"NOAUTH", "set PasswordEnv or PasswordFile"}},
		{"password file missing", SharedRateConfig{Addr: srv.Addr, PasswordFile: "/nonexistent/asyncbeam-redis-pw"},
			[]string{"/nonexistent/asyncbeam-redis-pw", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Key, cfg.PerSecond, cfg.Burst, cfg.Workers = "test:"+uuid.NewString(), 200, 1, 4
			r, err := NewSharedRate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			logs := logTo(r)
			// Past the second of fallback, so that the limit goes back to
			// Redis at least once.
			const d = 1500 * time.Millisecond
			start := time.Now()
			got := hammer(t, r, 8, d)
			if took := time.Since(start); took > d+500*time.Millisecond {
				t.Errorf("Wait returned %v after the deadline; want within 500 ms of it", took-d)
			}
			if limit := int64(200/4*d.Seconds()) + 2; got > limit || got == 0 {
				t.Errorf("calls in %v = %d; want 1 to %d (a quarter of 200/s, Workers 4)", d, got, limit)
			}
			if r.Errors() < 2 {
				t.Errorf("Errors() = %d; want a failure each time it went to Redis (at least 2)", r.Errors())
			}
			lines := logs.Lines()
			if len(lines) != 1 {
				t.Fatalf("log lines:\n%s\nwant exactly one", strings.Join(lines, "\n"))
			}
			t.Logf("the log line: %s", lines[0])
			for _, want := range tc.want {
				if !strings.Contains(lines[0], want) {
					t.Errorf("log line %q: want %q in it", lines[0], want)
				}
			}
			if strings.Contains(lines[0], "horse") {
				t.Errorf("log line %q shows a password", lines[0])
			}
		})
	}
}

func TestSharedRateConfigRedisErrorsSayWhatToChange(t *testing.T) {
	for _, tc := range []struct {
		cfg  SharedRateConfig
		want string
	}{
		{SharedRateConfig{Addr: "rediss://:pw@h:1"}, "carries a password, which would ship inside the pipeline graph; remove it"},
		{SharedRateConfig{Addr: "tcp://h:1"}, "not redis:// or rediss://"},
		{SharedRateConfig{Addr: "redis://h:1", PasswordEnv: "PW", PasswordFile: "/pw"}, "both set; keep one"},
		{SharedRateConfig{Addr: "redis://app@h:1"}, "names the user \"app\" but no password; set PasswordEnv or PasswordFile"},
	} {
		tc.cfg.Key, tc.cfg.PerSecond, tc.cfg.Burst = "k", 1, 1
		_, err := NewSharedRate(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSharedRate(%+v) = %v; want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}

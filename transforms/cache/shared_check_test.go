package cache

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asyncbeam/asyncbeam/integration/redistest"
)

// TestSharedCheck: Check reaches Redis, or fails naming the cause, and
// logs nothing either way.
func TestSharedCheck(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Password: "right horse"})
	t.Setenv("ASYNCBEAM_TEST_REDIS_PW", "right horse")
	t.Setenv("ASYNCBEAM_TEST_REDIS_WRONG", "wrong horse")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name string
		cfg  SharedConfig
		want string // in the error; "" for none
	}{
		{"reached", SharedConfig{Addr: srv.Addr, PasswordEnv: "ASYNCBEAM_TEST_REDIS_PW"}, ""},
		{"password variable unset", SharedConfig{Addr: srv.Addr, PasswordEnv: "ASYNCBEAM_TEST_REDIS_UNSET"},
			"environment variable ASYNCBEAM_TEST_REDIS_UNSET is not set on this worker"},
		{"password refused", SharedConfig{Addr: srv.Addr, PasswordEnv: "ASYNCBEAM_TEST_REDIS_WRONG"},
			"Redis refused the password read from environment variable ASYNCBEAM_TEST_REDIS_WRONG"},
		{"no password given", SharedConfig{Addr: srv.Addr}, "NOAUTH"},
		{"server down", SharedConfig{Addr: closed}, "Redis failed or did not answer in time (Redis at " + closed + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Prefix, cfg.TTL = "test", time.Minute
			s, err := NewShared(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			logs := logTo(s)
			err = s.Check(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check = %v; want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check = %v; want an error saying %q", err, tc.want)
			}
			if st := s.Stats(); st != (SharedStats{}) {
				t.Errorf("stats = %+v; want nothing counted", st)
			}
			if l := logs.Lines(); len(l) != 0 {
				t.Errorf("log lines %q; want none", l)
			}
		})
	}
}

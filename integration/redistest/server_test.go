package redistest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartRedisWithPasswordAndTLS(t *testing.T) {
	s := Start(t, Options{Password: "secret", TLS: true})
	ca, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("the CA file holds no certificate")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		opt  *redis.Options
		want string // in the error; "" for a PONG
	}{
		{"plain, right password", &redis.Options{Addr: s.Addr, Password: "secret"}, ""},
		{"plain, no password", &redis.Options{Addr: s.Addr}, "NOAUTH"},
		{"plain, wrong password", &redis.Options{Addr: s.Addr, Password: "wrong"}, "WRONGPASS"},
		{"TLS, right password", &redis.Options{Addr: s.TLSAddr, Password: "secret",
			TLSConfig: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}}, ""},
		{"TLS, system roots", &redis.Options{Addr: s.TLSAddr, Password: "secret",
			TLSConfig: &tls.Config{ServerName: "127.0.0.1"}}, "certificate"},
	} {
		c := redis.NewClient(tc.opt)
		err := c.Ping(ctx).Err()
		c.Close()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: PING = %v; want PONG", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: PING = %v; want an error with %q", tc.name, err, tc.want)
		}
	}
}

package redistest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configures a Server.
type Options struct {
	// Password, if not empty, is the server's requirepass.
	Password string
	// TLS also opens a TLS port, with a certificate for 127.0.0.1 and
	// localhost signed by a CA made for this server (Server.CAFile).
	TLS bool
}

// Server is a redis-server of one test's own, on loopback, keeping nothing
// on disk.
type Server struct {
	// Addr is the plain port, host:port.
	Addr string
	// TLSAddr is the TLS port, host:port; empty without Options.TLS.
	TLSAddr string
	// CAFile is the PEM certificate of the CA that signed the TLS port's
	// certificate; empty without Options.TLS.
	CAFile string
}

// Start starts a redis-server on free loopback ports and stops it (and
// waits for it) when t ends. Without redis-server on the PATH it skips t,
// or fails it when CI is set (.ci/run installs it through
// integration/redis.sh). With Options.TLS and a redis-server built without
// TLS, it skips t saying so.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed: .ci/run must install it (integration/redis.sh start)")
		}
		t.Skip("needs redis-server: apt-get install redis-server")
	}
	dir := t.TempDir()
	var tlsArgs []string
	s := &Server{}
	if o.TLS {
		s.CAFile, tlsArgs = writeCerts(t, dir)
	}
	// A free port may be taken between asking and binding: try a few.
	var last string
	for range 3 {
		s.Addr = "127.0.0.1:" + strconv.Itoa(freePort(t))
		args := []string{"--port", port(s.Addr), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no", "--logfile", ""}
		if o.Password != "" {
			args = append(args, "--requirepass", o.Password)
		}
		if o.TLS {
			s.TLSAddr = "127.0.0.1:" + strconv.Itoa(freePort(t))
			args = append(append(args, "--tls-port", port(s.TLSAddr)), tlsArgs...)
		}
		ok, out := run(t, bin, args, s)
		if ok {
			return s
		}
		last = out
		if o.TLS && strings.Contains(out, "Bad directive") && strings.Contains(out, "tls") {
			t.Skipf("this redis-server was built without TLS:\n%s", out)
		}
	}
	t.Fatalf("redis-server did not start:\n%s", last)
	return nil
}

// run starts the server and waits until its ports accept connections
// (true), or until it exits (false, with its output).
func run(t testing.TB, bin string, args []string, s *Server) (bool, string) {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false, out.String()
		case <-time.After(20 * time.Millisecond):
		}
		if listening(s.Addr) && (s.TLSAddr == "" || listening(s.TLSAddr)) {
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			return true, ""
		}
	}
	cmd.Process.Kill()
	<-exited
	t.Fatalf("redis-server did not listen within 10 s:\n%s", out.String())
	return false, ""
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// freePort returns a loopback port that nobody listened on just now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// syncBuffer is the server's output, written by exec's copying goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// writeCerts writes a CA and a server certificate signed by it into dir,
// and returns the CA's file and the server's TLS arguments: clients are
// not asked for certificates.
func writeCerts(t testing.TB, dir string) (caFile string, args []string) {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "ca.pem")
	cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	for name, b := range map[string][]byte{caFile: ca.CertPEM, cert: certPEM, key: keyPEM} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(fmt.Errorf("writing the test certificates: %w", err))
		}
	}
	return caFile, []string{"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", caFile, "--tls-auth-clients", "no"}
}

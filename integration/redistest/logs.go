package redistest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// Logs gathers the log lines of a Redis client under test (its Logger),
// written from any goroutine, for the test to read.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// NewLogs returns empty Logs and a text logger that writes to them.
func NewLogs() (*Logs, *slog.Logger) {
	l := &Logs{}
	return l, slog.New(slog.NewTextHandler(l, nil))
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Lines returns the lines written so far.
func (l *Logs) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := strings.TrimSpace(l.b.String()); s != "" {
		return strings.Split(s, "\n")
	}
	return nil
}

package main

// Each run gets a prism job server of its own, started by this (the parent)
// process: its CPU time and memory are then the runner's alone, apart from
// the worker's. Prism runs in a process of its own as a user's job server
// would; embedded in the worker's process, as before, its busy wait (see
// pipeline.go) was counted as the worker's CPU.
//
// An idle job server costs next to nothing: measured here once (2 cores,
// Beam v2.77.0), a prism job server that had started and had no job used
// 70 ms of CPU in 60 s, about 1.2 ms per second (and 41 MB resident). Over
// a run of a 5 s source at 0.8 × P/L (about 9 s with the lead) that is under
// 0.001 CPU s per 1,000 outputs, so nothing is subtracted for it.
//
// Seen here, and not with embedded prism: a stateful stage's processing-time
// timers (async's, timeronly's, AsyncWrapper's) can starve while data
// bundles keep their keys busy. Prism (engine/elementmanager.go,
// handleProcessingTimeTimer) puts back a due timer whose key is in a bundle
// and wakes itself at once (wakeUpAt with a time already past), so its
// scheduling loop spins, on 2 cores about 1.5 of them, slowing the worker
// until the source stops. At 100 and 1,000 keys it took most runs of
// timeronly at 0.8 × P/L (sustained 0, p99 about the source's length plus
// 3 s, runner CPU near 1 s per 1,000 outputs); at 10,000 keys none.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// prismDir holds the prism binary, built once per bench invocation.
var prismDir string

// prismBinary builds prism from this module's Beam version, once.
var prismBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "bench-prism-")
	if err != nil {
		return "", err
	}
	prismDir = dir
	bin := filepath.Join(dir, "prism")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/apache/beam/sdks/v2/go/cmd/prism").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building prism: %v: %s", err, out)
	}
	return bin, nil
})

// removePrism removes the binary built, at the end of the bench.
func removePrism() {
	if prismDir != "" {
		os.RemoveAll(prismDir)
	}
}

// jobServer is one prism job server process.
type jobServer struct {
	cmd    *exec.Cmd
	port   int
	logs   *tailBuffer
	exited chan struct{} // closed once cmd.Wait has returned
	once   sync.Once
	usage  usage
}

// startJobServer starts prism on free ports and waits until it accepts
// connections.
func startJobServer() (*jobServer, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	j := &jobServer{port: ports[0], logs: newTailBuffer(8 << 10), exited: make(chan struct{})}
	if *runnerProfile != "" { // this program as the job server, profiled (jobserver_profile.go)
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding this program to serve the job server: %w", err)
		}
		j.cmd = exec.Command(self, "--serve_jobserver="+strconv.Itoa(ports[0]), "--runner_cpuprofile="+*runnerProfile)
	} else {
		bin, err := prismBinary()
		if err != nil {
			return nil, err
		}
		j.cmd = exec.Command(bin, "-job_port", strconv.Itoa(ports[0]), "-web_port", strconv.Itoa(ports[1]), "-log_level", "warn")
	}
	j.cmd.Stdout, j.cmd.Stderr = j.logs, j.logs
	if err := j.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting prism: %w", err)
	}
	go func() { // owned by the jobServer: stop waits for it
		j.cmd.Wait()
		close(j.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "localhost:"+strconv.Itoa(j.port), time.Second)
		if err == nil {
			c.Close()
			return j, nil
		}
		select {
		case <-j.exited:
			return nil, fmt.Errorf("prism exited before serving: %s", j.logs)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			j.stop()
			return nil, fmt.Errorf("prism did not accept connections on port %d within 30 s: %s", j.port, j.logs)
		}
	}
}

func (j *jobServer) pid() int { return j.cmd.Process.Pid }

// stop ends prism (SIGTERM, then SIGKILL after 10 s; not SIGINT, which a shell leaves ignored in background jobs, and prism inherits that), waits for it and
// returns what it used. It may be called more than once.
func (j *jobServer) stop() usage {
	j.once.Do(func() {
		j.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-j.exited:
		case <-time.After(10 * time.Second):
			j.cmd.Process.Kill()
			<-j.exited
		}
		j.usage = usageOf(j.cmd.ProcessState)
		if *runnerProfile != "" && !j.cmd.ProcessState.Success() {
			fmt.Fprintf(os.Stderr, "bench: the profiled job server ended with %v; its profile (%s) may be incomplete: %s\n", j.cmd.ProcessState, *runnerProfile, j.logs)
		}
	})
	return j.usage
}

// freePorts finds n ports free now, holding each open until all are found
// so that they differ.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "localhost:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailBuffer keeps the last max bytes written to it: a process's log, for
// the error when it fails. exec.Cmd copies into it from one goroutine and
// Wait waits for that goroutine; the mutex covers reads before then.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(bytes.TrimSpace(t.b))
	if s == "" {
		return "(no output)"
	}
	return s
}

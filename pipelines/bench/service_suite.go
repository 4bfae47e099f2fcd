package main

// The service suite (issue 21): the enrich job against its loopback service
// with a capacity, in real processes, with fixed parallelism 64, a rate
// limit and adaptive concurrency; the capacity dropping mid-run; a rate of
// 500 per worker and shared by two workers through Redis. Its figures come
// from the service's own counts per second (what it served, refused and
// saw arrive) and the job's summary line; the adaptive limit over time from
// the job's events.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// serviceRun is one job of the suite and what it printed.
type serviceRun struct {
	name, desc string
	args       []string
	events     string // --events file, for the limit over time

	out                                string
	in, ok, failed, calls, overloaded  int64
	limit                              int64
	wall                               time.Duration
	arrived, served, refused, windows5 []int64
	retries                            []int64 // calls with an attempt number above 1, per second
	err                                error
}

// The service's capacity and latency: its best throughput is
// capacity / latency = 1,200 calls a second.
const (
	svcCapacity = 24
	svcLatency  = 20 * time.Millisecond
	svcBest     = float64(svcCapacity) / 0.020
)

func runServiceSuite() error {
	dir, bin, err := buildEnrich("bench-service-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	capacity := []string{"--service_capacity=" + strconv.Itoa(svcCapacity), "--latency=" + svcLatency.String(), "--generate=30000", "--customers=20000"}
	runs := []*serviceRun{
		{name: "fixed64", desc: "fixed parallelism 64", args: append(capacity, "--concurrency=64")},
		{name: "rate1100", desc: "--rate_limit 1100, parallelism 64", args: append(capacity, "--concurrency=64", "--rate_limit=1100")},
		{name: "adaptive", desc: "--adaptive 1,64", args: append(capacity, "--adaptive=1,64"), events: filepath.Join(dir, "adaptive.jsonl")},
		{name: "drop", desc: "--adaptive 1,64, capacity 24 -> 12 at 15 s", args: append(capacity, "--adaptive=1,64", "--service_capacity_later=12", "--service_capacity_at=15s"),
			events: filepath.Join(dir, "drop.jsonl")},
		{name: "rate500", desc: "--rate_limit 500, no capacity", args: []string{"--latency=" + svcLatency.String(), "--generate=15000", "--customers=10000", "--rate_limit=500"}},
	}
	for _, r := range runs {
		args := append([]string{"--output", filepath.Join(dir, r.name)}, r.args...)
		if r.events != "" {
			args = append(args, "--events", r.events)
		}
		r.out, r.err = runEnrich(bin, args...)
		r.parse()
		fmt.Printf("   service %-9s %s\n", r.name, r.line())
	}
	shared := runShared(bin, dir)
	printServiceTable(append(runs, shared...))
	printServiceTargets(runs, shared)
	if *chartsDir != "" {
		file, err := limitChart(*chartsDir, runs)
		if err != nil {
			return err
		}
		fmt.Println("charts:", file)
	}
	return nil
}

// buildEnrich builds the enrich job into a new temporary directory (named
// from pattern), which the caller removes.
func buildEnrich(pattern string) (dir, bin string, err error) {
	if dir, err = os.MkdirTemp("", pattern); err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "enrich")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/asyncbeam/asyncbeam/pipelines/enrich").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("building the enrich job: %v\n%s", err, out)
	}
	return dir, bin, nil
}

// runEnrich runs the job and returns its output.
func runEnrich(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// runShared runs two jobs sharing a rate of 500 per second through Redis,
// both calling the first one's service, so that its counts are their sum.
func runShared(bin, dir string) []*serviceRun {
	addr := os.Getenv("ASYNCBEAM_REDIS")
	a := &serviceRun{name: "sharedA", desc: "--shared_rate_limit 500, worker A (its service counts both)"}
	b := &serviceRun{name: "sharedB", desc: "--shared_rate_limit 500, worker B"}
	if addr == "" {
		a.err = fmt.Errorf(`ASYNCBEAM_REDIS is not set: eval "$(integration/redis.sh start)"`)
		return []*serviceRun{a}
	}
	key := fmt.Sprintf("--rate_key=bench:%d", time.Now().UnixNano())
	common := []string{"--latency=" + svcLatency.String(), "--customers=10000", "--shared_rate_limit=500", "--redis=" + addr, key}
	cmdA := exec.Command(bin, append([]string{"--output", filepath.Join(dir, "sharedA"), "--generate=9000"}, common...)...)
	stdout, err := cmdA.StdoutPipe()
	if err != nil {
		a.err = err
		return []*serviceRun{a}
	}
	cmdA.Stderr = cmdA.Stdout
	if a.err = cmdA.Start(); a.err != nil {
		return []*serviceRun{a}
	}
	var outA strings.Builder
	url := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`service (http://\S+)`)
		sent := false
		for sc.Scan() {
			outA.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				url <- strings.TrimSuffix(m[1], ",")
				sent = true
			}
		}
		if !sent {
			close(url)
		}
		io.Copy(io.Discard, stdout)
	}()
	u, ok := <-url
	if ok {
		b.out, b.err = runEnrich(bin, append([]string{"--output", filepath.Join(dir, "sharedB"), "--generate=6000", "--service_url=" + u}, common...)...)
	} else {
		b.err = fmt.Errorf("worker A printed no service URL")
	}
	wg.Wait()
	a.err = cmdA.Wait()
	a.out = outA.String()
	a.parse()
	b.parse()
	fmt.Printf("   service %-9s %s\n   service %-9s %s\n", a.name, a.line(), b.name, b.line())
	return []*serviceRun{a, b}
}

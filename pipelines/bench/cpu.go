package main

// CPU time and memory of the two processes of a run: the worker (the child,
// or the python process, with its SDK worker inside: LOOPBACK) and the
// runner (the prism job server). Their totals come from the rusage the
// kernel reports when each is waited for; a time series of both, sampled
// from /proc while the run goes, gives the CPU spent while idle.

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"syscall"
	"time"
)

// usage is what a process used, from its rusage.
type usage struct {
	cpu   time.Duration // user + system
	rssMB float64       // peak resident set
}

func usageOf(ps *os.ProcessState) usage {
	if ps == nil {
		return usage{}
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return usage{}
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rssMB: float64(ru.Maxrss) / 1024} // Linux reports KiB
}

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// 100 Hz on Linux.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time (utime + stime, fields 14 and 15 of
// /proc/PID/stat) the process has used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Field 2, the command, is in parentheses and may hold spaces: count
	// fields from after its closing one, which is field 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	utime, err1 := strconv.ParseInt(string(f[14-3]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[15-3]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime or stime", pid)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// cpuPoint is one sample: seconds since the worker started, and the CPU
// seconds the worker and the runner had used by then.
type cpuPoint [3]float64

func point(at time.Duration, worker, runner time.Duration) cpuPoint {
	r := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	return cpuPoint{r(at.Seconds()), r(worker.Seconds()), r(runner.Seconds())}
}

// sampleEvery is the sampling period of the CPU series.
const sampleEvery = 500 * time.Millisecond

// sampler samples the CPU time of the worker and the runner every
// sampleEvery, from origin, until stopped.
type sampler struct {
	stopc  chan struct{}
	done   chan struct{}
	points []cpuPoint
}

func startSampler(worker, runner int, origin time.Time) *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() { // owned by the run: stop waits for it
		defer close(s.done)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stopc:
				return
			case now := <-t.C:
				w, err1 := procCPU(worker)
				var r time.Duration
				var err2 error
				if runner > 0 { // none on embedded prism: the runner is in the worker's process
					r, err2 = procCPU(runner)
				}
				if err1 != nil || err2 != nil {
					continue // the worker is exiting: the run adds its final point
				}
				s.points = append(s.points, point(now.Sub(origin), w, r))
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the points.
func (s *sampler) stop() []cpuPoint {
	close(s.stopc)
	<-s.done
	return s.points
}

// quietCPU is the CPU seconds per second of the worker and the runner from
// 2 s after the last output to the end of the series (the quiet suite: the
// source keeps ticking with nothing to emit), and how long that was; ok is
// false when it was shorter than a second.
func quietCPU(series []cpuPoint, seriesStartUs, lastOutputUs int64) (worker, runner, seconds float64, ok bool) {
	if len(series) < 2 || lastOutputUs == 0 {
		return 0, 0, 0, false
	}
	from := float64(lastOutputUs-seriesStartUs)/1e6 + 2
	end := series[len(series)-1]
	start, found := cpuPoint{}, false
	for _, p := range series { // the first sample at or after from
		if p[0] >= from {
			start, found = p, true
			break
		}
	}
	if !found || end[0]-start[0] < 1 {
		return 0, 0, 0, false
	}
	d := end[0] - start[0]
	return (end[1] - start[1]) / d, (end[2] - start[2]) / d, d, true
}

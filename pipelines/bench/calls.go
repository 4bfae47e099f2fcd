package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// An element's value is "createdUnixMicros/index"; every contender returns
// it unchanged after the call, so the sink can measure end-to-end latency
// and check that each index came out once per window.
func value(created time.Time, i int) string {
	return strconv.FormatInt(created.UnixMicro(), 10) + "/" + strconv.Itoa(i)
}

func createdOf(v string) time.Time {
	us, _ := strconv.ParseInt(v[:strings.IndexByte(v, '/')], 10, 64)
	return time.UnixMicro(us)
}

func indexOf(v string) int {
	i, _ := strconv.Atoi(v[strings.IndexByte(v, '/')+1:])
	return i
}

// caller makes the slow call: a sleep, or a request to the loopback service.
// The element with index i takes SlowX times as long when i % SlowEvery is
// in SlowAt.
type caller struct {
	LatencyUs int64
	SlowEvery int
	SlowAt    []int
	SlowX     float64
	URL       string
}

func callerFor(s spec) caller {
	return caller{LatencyUs: s.Latency.Microseconds(), SlowEvery: s.SlowEvery, SlowAt: s.SlowAt, SlowX: s.SlowX}
}

func (c caller) call(ctx context.Context, v string) error {
	d := time.Duration(c.LatencyUs) * time.Microsecond
	if c.SlowEvery > 0 && slices.Contains(c.SlowAt, indexOf(v)%c.SlowEvery) {
		d = time.Duration(float64(d) * c.SlowX)
	}
	return c.wait(ctx, d)
}

// callBatch makes one request for n elements: L plus itemCost per element.
func (c caller) callBatch(ctx context.Context, n int, itemCost time.Duration) error {
	return c.wait(ctx, time.Duration(c.LatencyUs)*time.Microsecond+time.Duration(n)*itemCost)
}

// wait takes d: a sleep, or a request the loopback service answers after d.
func (c caller) wait(ctx context.Context, d time.Duration) error {
	if c.URL == "" {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return httpCall(ctx, c.URL, d)
}

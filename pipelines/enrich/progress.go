package main

// The live progress line the job prints while it runs.

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// showProgress prints the loopback service's call count every second: a
// live line on a terminal, plain lines otherwise. The returned func stops it
// and waits for its goroutine.
func showProgress(svc *service, total int, start time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	live := isTerminal(os.Stdout)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				if live {
					fmt.Println()
				}
				return
			case <-tick.C:
				line := fmt.Sprintf("progress: elapsed=%s", time.Since(start).Round(time.Second))
				if svc != nil {
					line += fmt.Sprintf(" calls=%d/%d in_flight=%d", svc.calls.Load(), total, svc.inFlight.Load())
				}
				if live {
					fmt.Printf("\r%-70s", line)
				} else {
					fmt.Println(line)
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

package terms

// Faults that a test of this package turns on, to show on a real runner what
// that runner does not do by itself. Off, they cost one atomic load.

import (
	"strings"
	"sync"
	"sync/atomic"
)

var testHooks struct {
	on sync.Mutex
	// any is set while some hook is on.
	any atomic.Bool
	// silentTimers lists scope names: streamFn of a transform whose scope
	// contains one sets no commit timer, as if the runner never fired it
	// (Flink's at the end of input), so that only its ProcessElement and
	// the end-of-input drain commit.
	silentTimers []string
}

// timersSilenced reports whether a test silenced this transform's timers.
func (c *Config) TimersSilenced() bool {
	if !testHooks.any.Load() {
		return false
	}
	testHooks.on.Lock()
	defer testHooks.on.Unlock()
	for _, s := range testHooks.silentTimers {
		if strings.Contains(c.Name, s) {
			return true
		}
	}
	return false
}

// SilenceTimers makes the stream path of every transform whose scope name
// contains scope set no commit timer, until undo is called.
func SilenceTimers(scope string) (undo func()) {
	testHooks.on.Lock()
	testHooks.silentTimers = append(testHooks.silentTimers, scope)
	testHooks.any.Store(true)
	testHooks.on.Unlock()
	return func() {
		testHooks.on.Lock()
		defer testHooks.on.Unlock()
		for i, s := range testHooks.silentTimers {
			if s == scope {
				testHooks.silentTimers = append(testHooks.silentTimers[:i], testHooks.silentTimers[i+1:]...)
				break
			}
		}
		testHooks.any.Store(len(testHooks.silentTimers) > 0)
	}
}

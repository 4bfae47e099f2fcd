package async

import "testing"

// SilenceCommitTimers makes the stream path of every transform whose scope
// name contains scope set no commit timer until the test ends (testhooks.go).
func SilenceCommitTimers(t testing.TB, scope string) {
	testHooks.on.Lock()
	testHooks.silentTimers = append(testHooks.silentTimers, scope)
	testHooks.any.Store(true)
	testHooks.on.Unlock()
	t.Cleanup(func() {
		testHooks.on.Lock()
		defer testHooks.on.Unlock()
		for i, s := range testHooks.silentTimers {
			if s == scope {
				testHooks.silentTimers = append(testHooks.silentTimers[:i], testHooks.silentTimers[i+1:]...)
				break
			}
		}
		testHooks.any.Store(len(testHooks.silentTimers) > 0)
	})
}

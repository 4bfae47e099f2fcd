package async

import (
	"testing"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// SilenceCommitTimers makes the stream path of every transform whose scope
// name contains scope set no commit timer until the test ends (testhooks.go).
func SilenceCommitTimers(t testing.TB, scope string) {
	t.Cleanup(terms.SilenceTimers(scope))
}

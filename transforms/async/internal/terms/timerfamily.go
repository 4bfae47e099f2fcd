package terms

// Timer family names of one transform. Beam lets two stateful DoFns share a
// family name, but Beam Python's job service (apache-beam 2.78, its
// FnApiRunner) buffers the timers of a fused stage by family name, not by
// transform: two async transforms in a row then fire one's timers at the
// other, with the wrong key coder (run: 0 of 40 outputs, or the job failed
// decoding; Beam issue 21995). So each transform gets families of its own.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
)

// familySuffixes counts, per scope name, the transforms built in this
// process, so that two transforms of one scope name get two suffixes.
var familySuffixes struct {
	sync.Mutex
	built map[string]int
}

// TimerSuffix is the suffix of the timer families of the next transform of
// scope name: a short hash of the name and of how many transforms of that
// name this process built before, so that the same program names the same
// families at every build (a pipeline update then finds its timers). A
// program that builds an async transform of the same scope name before
// this one, bounded or not, or builds its pipeline twice, shifts the rank:
// an update from it to the old one needs a drain (DESIGN.md, "State across
// versions").
func TimerSuffix(name string) string {
	familySuffixes.Lock()
	defer familySuffixes.Unlock()
	if familySuffixes.built == nil {
		familySuffixes.built = map[string]int{}
	}
	n := familySuffixes.built[name]
	familySuffixes.built[name] = n + 1
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s#%d", name, n)))
	return "-" + hex.EncodeToString(sum[:4])
}

// Package nosplit turns off prism's splitting of running bundles for the
// pipeline being built, because prism loses the bag state of stateful DoFns
// when it splits their bundles.
//
// Prism (Beam Go v2.78.0) splits a bundle whose progress stalls, and hands
// the residual's elements to a new bundle, releasing the keys that only the
// residual holds. The split bundle still commits, when it ends, the state it
// was given at its start for every key it began with, released keys
// included: a key that a later bundle took over and committed in the
// meantime gets its older state back, and that bundle's writes are lost
// (run: prism_test.go with -nosplit.splitson; read: engine/elementmanager.go,
// splitBundle and PersistBundle). The async transform then loses the
// elements accepted there and outputs again those committed there (run: 4
// of 37 runs of the bench's stream on a loaded machine). Experiment turns
// the splitting off, for every stage of the job: prism then never splits a
// large bundle to spread it either.
//
// Use adds it to Beam's --experiments flag. Every transform of
// transforms/async calls Use when it is built, and runner.Run and
// runner.RunPortable call it before they submit.
package nosplit

import (
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
)

// Experiment is prism's experiment that turns off its splitting of running
// bundles.
const Experiment = "prism_disable_sdf_split"

// flagMu guards the --experiments flag between Use's read and its write.
var flagMu struct {
	sync.Mutex
	logged bool
}

// Use adds Experiment to the --experiments flag when Wanted says the
// runner named by --runner may be prism. It does nothing when the flag
// holds it already, and logs one line the first time it adds it. Calls of
// Use may run at once; flag.Parse and a pipeline's submission must not run
// beside it. Flags must be parsed before Use: a later flag.Parse that sets
// --experiments replaces what Use added.
func Use() {
	if !Wanted(*runners.Runner) {
		return
	}
	flagMu.Lock()
	defer flagMu.Unlock()
	if !add(jobopts.Experiments) {
		return
	}
	if !flagMu.logged {
		flagMu.logged = true
		slog.Info("nosplit: added --experiments=" + Experiment + " (prism's bundle splits lose the state of stateful DoFns)")
	}
}

// add adds Experiment to the comma-separated list in exps, and reports
// whether it was missing.
func add(exps *string) bool {
	if slices.Contains(strings.Split(*exps, ","), Experiment) {
		return false
	}
	if strings.TrimSpace(*exps) == "" {
		*exps = Experiment
	} else {
		*exps += "," + Experiment
	}
	return true
}

// Wanted reports whether a pipeline run with --runner=runner may run on
// prism, so that it needs Experiment: prism's own names, the default (empty)
// and the legacy direct runner (package runner runs those on embedded
// prism), and the portable runner's names, since a job server does not say
// which runner it is. Other job servers ignore an experiment they do not
// know (run: the integration tests against Beam Python's portable job
// service pass with it). Dataflow, Flink and Spark by name never run on
// prism, and get nothing.
func Wanted(runner string) bool {
	switch strings.ToLower(strings.TrimSpace(runner)) {
	case "", "prism", "prismrunner", "direct", "directrunner", "universal", "portable", "portablerunner":
		return true
	}
	return false
}

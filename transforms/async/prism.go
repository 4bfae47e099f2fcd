package async

// Prism's bundle splitting, which loses bag state under this transform:
// every transform of the package turns it off at construction when the
// pipeline will run on prism.

import (
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
)

// PrismExperiment turns off prism's splitting of slow bundles. Prism v2.77.0
// splits a stateful bundle by handing its residual elements to a new bundle
// and releasing their keys, even when the primary still holds elements of
// the same key; the two bundles then run one key at once, and the later
// commit of its bag state drops the other's writes (measured: one element
// in ten runs lost from a key with two 4 MB values under the race
// detector). UsePrismExperiment adds it.
const PrismExperiment = "prism_disable_sdf_split"

// prismFlag guards the experiments flag between UsePrismExperiment's check
// and its write, and remembers whether it has logged.
var prismFlag struct {
	sync.Mutex
	logged bool
}

// UsePrismExperiment adds PrismExperiment to the --experiments flag when the
// pipeline will run on prism: --runner empty (the default of beamx.Run and
// ptest), "prism", or "direct" (which runner.Run replaces with prism). Every
// transform of this package calls it when it is built, so a pipeline run
// with beamx.Run, ptest or runner.Run needs nothing more, as long as flags
// are parsed before the pipeline is built (flag.Parse and beam.Init first,
// as beamx programs and ptest.Main do: a later flag.Parse would replace the
// flag's value). It does nothing when the flag holds the experiment
// already, logs one line the first time it adds it, and is safe for
// concurrent use.
//
// A job server you submit to with --runner=universal or --runner=portable
// and --endpoint does not say which runner it is: when it is prism, pass
// --experiments=prism_disable_sdf_split yourself (with --runner=prism and
// --endpoint the transform adds it, and it goes to the job server with the
// pipeline's options).
func UsePrismExperiment() {
	if !runsOnPrism() {
		return
	}
	prismFlag.Lock()
	defer prismFlag.Unlock()
	if slices.Contains(jobopts.GetExperiments(), PrismExperiment) {
		return
	}
	if *jobopts.Experiments == "" {
		*jobopts.Experiments = PrismExperiment
	} else {
		*jobopts.Experiments += "," + PrismExperiment
	}
	if !prismFlag.logged {
		prismFlag.logged = true
		slog.Info("async: the pipeline runs on prism: added --experiments=" + PrismExperiment +
			" (prism's bundle splitting loses this transform's state; see async.PrismExperiment)")
	}
}

// runsOnPrism reports whether the --runner flag selects prism, as
// runner.Name decides (in lower case): empty, prism's names ("prism",
// "PrismRunner"), or the legacy Go direct runner's.
func runsOnPrism() bool {
	switch strings.ToLower(strings.TrimSpace(*runners.Runner)) {
	case "", "prism", "prismrunner", "direct", "directrunner":
		return true
	}
	return false
}

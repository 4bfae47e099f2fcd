package launcherflags_test

import (
	"flag"
	"testing"

	"github.com/asyncbeam/asyncbeam/pipelines/bench/launcherflags"
)

// own is registered as a program's own flag is: by a package that imports
// launcherflags.
var own = flag.String("launcherflags_test_own", "", "a flag of the program, not of the launcher")

func TestHas(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"endpoint", true},               // Beam's job options
		{"runner", true},                 // Beam's runner choice
		{"environment_type", true},       // Beam's job options
		{"checkpointing_interval", true}, // the launcher's
		{"launcherflags_test_own", false},
		{"no_such_flag", false},
	} {
		if got := launcherflags.Has(tt.name); got != tt.want {
			t.Errorf("Has(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

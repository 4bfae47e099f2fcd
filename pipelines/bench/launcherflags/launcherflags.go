// Package launcherflags names the command-line flags of Beam and of the
// project's launcher (package runner), as opposed to the flags of the
// program that imports it: the flags registered on flag.CommandLine before
// this package is initialised. It imports the launcher, so that the
// launcher's flags and Beam's (its runners' included) are among them; a
// program's own flags, registered as its main package is initialised, come
// after, since Go initialises every imported package first.
package launcherflags

import (
	"flag"

	_ "github.com/asyncbeam/asyncbeam/runner" // its flags and Beam's, registered before names is
)

// names holds the flags registered when this package was initialised.
var names = registered()

func registered() map[string]bool {
	m := map[string]bool{}
	flag.VisitAll(func(f *flag.Flag) { m[f.Name] = true })
	return m
}

// Has reports whether name is a flag of Beam or of the launcher.
func Has(name string) bool { return names[name] }

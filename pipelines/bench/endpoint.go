package main

// Runs on a job server the bench did not start (--endpoint): Flink's, a
// prism job server or Beam Python's job service that someone runs. Each Go
// child submits its pipeline there through the project's launcher
// (runner.Run) with the --runner given (universal by default) and its SDK
// worker inside (LOOPBACK), as on the prism job server the bench starts.
// The job server's process is not the bench's: its CPU time and memory are
// not measured, and the rows say so.
//
// Beam's and the launcher's flags (launcherflags) set on the bench's
// command line go to every Go child as given, in every mode; --runner,
// --endpoint, --environment_type and --experiments are the bench's to set
// (childArgs).

import (
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/asyncbeam/asyncbeam/pipelines/bench/launcherflags"
	"github.com/asyncbeam/asyncbeam/runner/portable"
)

// external is the job server the runs submit to when the bench does not
// start it, and the runner that submits to it. The zero value: the bench
// runs prism itself (--prism).
type external struct {
	Endpoint, Runner string
}

// label names the runner and its job server, for a row or a header.
func (e external) label() string { return e.Runner + " at " + e.Endpoint }

// endpointRunners are the runners (lower case) that submit to the job
// server at --endpoint.
var endpointRunners = []string{"universal", "portable", "portablerunner", "flink", "flinkrunner", "spark", "sparkrunner", "prism", "prismrunner"}

// refusedWithEndpoint are the bench's flags that make no sense with a job
// server it did not start, and what to do instead.
var refusedWithEndpoint = []struct{ name, why string }{
	{"prism", "chooses where the bench runs prism; with --endpoint every run goes to the job server there: drop --prism"},
	{"robust_modes", "chooses where the bench runs prism for the robust suite; with --endpoint its rows run on the job server there, at --robust_jobserver_p: drop --robust_modes"},
	{"robust_p", "is the robust suite's parallelism on embedded prism; with --endpoint its rows run at --robust_jobserver_p: drop --robust_p"},
	{"runner_cpuprofile", "profiles a job server the bench starts, and the one at --endpoint is not the bench's: drop --runner_cpuprofile and profile that job server where it runs"},
	{"environment_config", "configures a worker environment, and the bench's SDK worker runs in its own child process (LOOPBACK): drop --environment_config"},
}

// chooseExternal reads the flags set on the command line (set: name to
// value) into where the runs go, refusing flags that make no sense there.
// processSuites names the suites asked for that run the enrich job on
// embedded prism in processes of their own, each with how to leave it out.
func chooseExternal(set map[string]string, processSuites []string) (external, error) {
	if v, ok := set["async"]; ok && v != "false" {
		return external{}, fmt.Errorf("--async returns once a job is submitted, and the bench measures each job to its end: drop --async")
	}
	endpoint := strings.TrimSpace(set["endpoint"])
	if endpoint == "" {
		for _, name := range []string{"endpoint", "runner", "environment_type", "environment_config"} {
			if _, ok := set[name]; ok {
				return external{}, fmt.Errorf("--%s=%q is for a job server the bench does not start: pass --endpoint=HOST:PORT with it, or drop it (without --endpoint the bench runs prism itself, --prism embedded or jobserver)", name, set[name])
			}
		}
		return external{}, nil
	}
	for _, r := range refusedWithEndpoint {
		if _, ok := set[r.name]; ok {
			return external{}, fmt.Errorf("--%s %s", r.name, r.why)
		}
	}
	if env, ok := set["environment_type"]; ok && !strings.EqualFold(env, "loopback") {
		return external{}, fmt.Errorf("--environment_type=%s: the bench's sink counts each output in the process that submits the job, so the SDK worker must run there: "+
			"pass --environment_type=LOOPBACK or drop it (the job server must reach this machine's loopback ports: a job server in a container needs the host's network)", env)
	}
	name := set["runner"]
	if name == "" {
		name = "universal"
	}
	if !slices.Contains(endpointRunners, strings.ToLower(name)) {
		return external{}, fmt.Errorf("--runner=%s does not submit to the job server at --endpoint: want universal (the default), portable, flink, spark or prism", name)
	}
	if len(processSuites) > 0 {
		return external{}, fmt.Errorf("with --endpoint, these run the enrich job on embedded prism in processes of their own, not at --endpoint: %s",
			strings.Join(processSuites, "; "))
	}
	return external{Endpoint: endpoint, Runner: name}, nil
}

// repeated is a flag given once per value (portable's --runner_option).
type repeated interface{ Values() []string }

var _ repeated = &portable.RunnerOptions

// setFlags are the flags set on the command line, by name; a repeated
// flag's values one per line.
func setFlags() map[string]string {
	set := map[string]string{}
	flag.Visit(func(f *flag.Flag) {
		if r, ok := f.Value.(repeated); ok {
			set[f.Name] = strings.Join(r.Values(), "\n")
			return
		}
		set[f.Name] = f.Value.String()
	})
	return set
}

// benchSets are the launcher's flags the bench sets for a child itself.
var benchSets = []string{"runner", "endpoint", "environment_type", "experiments"}

// childArgs are the flags a Go child gets after --child, from the spec and
// the flags set on the bench's command line (set). On a job server (the
// bench's own on port, or the one at the spec's endpoint) it submits with
// the runner named and its SDK worker inside (LOOPBACK). On embedded prism
// runner.Run chooses. Every other flag of Beam or the launcher set goes as
// given, in name order, once per line of its value (a repeated flag).
func childArgs(s spec, port int, set map[string]string) []string {
	var args []string
	switch {
	case s.Endpoint != "":
		args = []string{"--runner=" + s.Runner, "--endpoint=" + s.Endpoint}
	case s.JobServer:
		args = []string{"--runner=universal", fmt.Sprintf("--endpoint=localhost:%d", port)}
	}
	exps := list(set["experiments"])
	if len(args) > 0 {
		args = append(args, "--environment_type=LOOPBACK")
	}
	if len(exps) > 0 {
		args = append(args, "--experiments="+strings.Join(exps, ","))
	}
	var names []string
	for name := range set {
		if launcherflags.Has(name) && !slices.Contains(benchSets, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range strings.Split(set[name], "\n") {
			args = append(args, "--"+name+"="+v)
		}
	}
	return args
}

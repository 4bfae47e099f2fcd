package portable

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Checkpointing is Flink's checkpointing_interval: the time between
// checkpoints, 0 for none.
var Checkpointing = flag.Duration("checkpointing_interval", 0,
	"Flink: time between checkpoints, sent as Flink's checkpointing_interval option; "+
		"required when a revert step requires stable input")

// BatchRevert accepts a revert step in a job that Flink runs in batch mode,
// which ignores stable input.
var BatchRevert = flag.Bool("flink_batch_revert", false,
	"Flink: run a job with a revert step and only bounded input although Flink's batch mode ignores stable input, "+
		"so that Revert can run for an element a restart then replays (refused otherwise)")

// RunnerOptions are the --runner_option flags: pipeline options sent at the
// top level of the job's options, where a Java job server reads them.
var RunnerOptions optionList

func init() {
	flag.Var(&RunnerOptions, "runner_option",
		"a pipeline option for a portable job server (Flink, Spark, ...), as name=value with the option's snake_case name, "+
			"for example max_bundle_size=500; sent as beam:option:name:v1 (repeat the flag for several)")
}

// optionList is a repeatable name=value flag.
type optionList []string

func (l *optionList) String() string { return strings.Join(*l, ",") }

// Values returns the values given, one per use of the flag.
func (l *optionList) Values() []string { return slices.Clone(*l) }

func (l *optionList) Set(s string) error {
	if _, _, err := parseOption(s); err != nil {
		return err
	}
	*l = append(*l, s)
	return nil
}

// checkInterval refuses an interval Flink would refuse.
func checkInterval(d time.Duration) error {
	if d < 0 || (d > 0 && d < time.Millisecond) {
		return fmt.Errorf("portable: --checkpointing_interval=%v: want 1ms or more, or 0 for none (Flink takes milliseconds)", d)
	}
	return nil
}

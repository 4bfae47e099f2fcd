package portable

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

// Key is the job option key of a snake_case option name, as Java's
// PipelineOptionsTranslation reads it: beam:option:name:v1.
func Key(name string) string { return "beam:option:" + name + ":v1" }

// The Flink options Complete sets (FlinkPipelineOptions, in snake_case).
const (
	optStreaming         = "streaming"
	optIdleShutdown      = "shutdown_sources_after_idle_ms"
	optFinishBeforeCkpt  = "finish_bundle_before_checkpointing"
	optCheckpointing     = "checkpointing_interval"
	optStableInputDrain  = "enable_stable_input_drain"
	optMaxBundleTimeMs   = "max_bundle_time_mills"
	optExperiments       = "experiments" // Beam's list, which --experiments fills
	defaultBundleTimeMs  = 1000          // Flink's max_bundle_time_mills in streaming mode
	idleShutdownMs       = 15000
	minIntervalInBundles = 5 // without finish_bundle_before_checkpointing (see checkBuffering)
)

// optionName is a snake_case option name.
var optionName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// parseOption reads a --runner_option: name=value, where value is JSON (a
// number, true or false, a string, list or object), or else text. Quote a
// value that reads as JSON to send it as text: flink_version="1.10".
func parseOption(s string) (string, *structpb.Value, error) {
	name, text, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || !optionName.MatchString(name) {
		return "", nil, fmt.Errorf("--runner_option=%q: want name=value with the option's snake_case name, for example max_bundle_size=500", s)
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err == nil {
		if sv, err := structpb.NewValue(v); err == nil {
			return name, sv, nil
		}
	}
	return name, structpb.NewStringValue(text), nil
}

// checkpointingOf is the checkpoint interval a job has: --checkpointing_interval
// (flag), or else a --runner_option=checkpointing_interval=MS in user.
func checkpointingOf(flag time.Duration, user []string) time.Duration {
	if flag > 0 {
		return flag
	}
	for _, s := range user {
		if name, v, err := parseOption(s); err == nil && name == optCheckpointing && v.GetNumberValue() > 0 {
			flag = time.Duration(v.GetNumberValue()) * time.Millisecond
		}
	}
	return flag
}

// topLevel is what a job of runner kind sends at the top level of its
// options, by name: the runner's defaults for the job (flinkOptions), then
// the user's --runner_option values, which win.
func topLevel(kind Kind, streaming bool, interval time.Duration, user []string) (map[string]*structpb.Value, error) {
	if err := checkInterval(interval); err != nil {
		return nil, err
	}
	opts := map[string]*structpb.Value{}
	if kind == Flink {
		opts = flinkOptions(streaming, interval)
	}
	for _, s := range user {
		name, v, err := parseOption(s)
		if err != nil {
			return nil, err
		}
		if name == optExperiments {
			return nil, fmt.Errorf("--runner_option=%q: it would replace the job's whole experiments list, Beam's own and the one that turns off prism's bundle splits (runner/nosplit); pass experiments with --experiments=a,b instead", s)
		}
		opts[name] = v
	}
	if kind == Flink {
		if err := checkBuffering(streaming, opts); err != nil {
			return nil, err
		}
		warnIdleShutdown(streaming, opts)
	}
	return opts, nil
}

// flinkOptions are the options a Flink job needs that Beam Go does not
// send (see the package doc).
func flinkOptions(streaming bool, interval time.Duration) map[string]*structpb.Value {
	opts := map[string]*structpb.Value{}
	if streaming {
		opts[optStreaming] = structpb.NewBoolValue(true)
		opts[optIdleShutdown] = structpb.NewNumberValue(idleShutdownMs)
		opts[optFinishBeforeCkpt] = structpb.NewBoolValue(true)
	}
	if interval > 0 {
		opts[optCheckpointing] = structpb.NewNumberValue(float64(interval.Milliseconds()))
		opts[optStableInputDrain] = structpb.NewBoolValue(true)
	}
	return opts
}

// checkBuffering refuses a streaming Flink job whose checkpoints would
// buffer open bundles' output (finish_bundle_before_checkpointing off) at
// an interval near a bundle's life: Flink emits such output only when the
// stage starts its next bundle or sees a higher watermark, which a stage
// past its final watermark may never do (run: nothing came out at 1 s
// with 1 s bundles, everything at 5 s).
func checkBuffering(streaming bool, opts map[string]*structpb.Value) error {
	ckpt, finish := opts[optCheckpointing], opts[optFinishBeforeCkpt]
	if !streaming || ckpt == nil || ckpt.GetNumberValue() <= 0 || (finish != nil && finish.GetBoolValue()) {
		return nil
	}
	bundleMs := float64(defaultBundleTimeMs)
	if v := opts[optMaxBundleTimeMs]; v != nil && v.GetNumberValue() > 0 {
		bundleMs = v.GetNumberValue()
	}
	if ms := ckpt.GetNumberValue(); ms < minIntervalInBundles*bundleMs {
		return fmt.Errorf("portable: checkpoints every %v ms with %s=false: Flink buffers the output of the bundle open at each checkpoint "+
			"until the stage's next bundle, which a stage past its final watermark never starts, so output can be held for good; "+
			"leave %s on (the default sent), or checkpoint at least every %v ms (%d x %s)",
			ms, optFinishBeforeCkpt, optFinishBeforeCkpt, minIntervalInBundles*bundleMs, minIntervalInBundles, optMaxBundleTimeMs)
	}
	return nil
}

// warnIdleShutdown says what a streaming Flink job whose source shuts down
// at once risks.
func warnIdleShutdown(streaming bool, opts map[string]*structpb.Value) {
	if v := opts[optIdleShutdown]; streaming && v != nil && v.GetNumberValue() == 0 {
		slog.Warn("portable: " + optIdleShutdown + "=0: Flink's Impulse source then finishes at once, and a stage whose " +
			"processing-time timers hold its watermark spins forever at the end of input (the async transforms' commit timers do)")
	}
}

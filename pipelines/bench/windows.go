package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
)

// windowKind is a workload's windowing: global, fixed:D,
// sliding:SIZE/PERIOD or sessions:GAP.
type windowKind struct {
	Kind         string // global, fixed, sliding, sessions
	Size, Period time.Duration
	Gap          time.Duration
}

// parseWindow reads a window kind as the flags write it.
func parseWindow(s string) (windowKind, error) {
	kind, arg, _ := strings.Cut(strings.TrimSpace(s), ":")
	bad := func(err error) (windowKind, error) {
		return windowKind{}, fmt.Errorf("window %q: %v (want global, fixed:D, sliding:SIZE/PERIOD or sessions:GAP, durations such as 1s or 10s)", s, err)
	}
	switch kind {
	case "global", "":
		if arg != "" {
			return bad(fmt.Errorf("global takes no duration"))
		}
		return windowKind{Kind: "global"}, nil
	case "fixed":
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return bad(fmt.Errorf("bad size"))
		}
		return windowKind{Kind: "fixed", Size: d}, nil
	case "sliding":
		size, period, ok := strings.Cut(arg, "/")
		sz, err1 := time.ParseDuration(size)
		pd, err2 := time.ParseDuration(period)
		if !ok || err1 != nil || err2 != nil || sz <= 0 || pd <= 0 || sz%pd != 0 {
			return bad(fmt.Errorf("bad SIZE/PERIOD (SIZE must be a multiple of PERIOD)"))
		}
		return windowKind{Kind: "sliding", Size: sz, Period: pd}, nil
	case "sessions":
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return bad(fmt.Errorf("bad gap"))
		}
		return windowKind{Kind: "sessions", Gap: d}, nil
	}
	return bad(fmt.Errorf("unknown kind %q", kind))
}

func (w windowKind) String() string {
	switch w.Kind {
	case "fixed":
		return fmt.Sprintf("fixed %v windows", w.Size)
	case "sliding":
		return fmt.Sprintf("sliding %v/%v windows", w.Size, w.Period)
	case "sessions":
		return fmt.Sprintf("sessions of gap %v", w.Gap)
	}
	return "the global window"
}

// flag is the kind as the flags and the spec write it ("" for global).
func (w windowKind) flag() string {
	switch w.Kind {
	case "fixed":
		return "fixed:" + w.Size.String()
	case "sliding":
		return "sliding:" + w.Size.String() + "/" + w.Period.String()
	case "sessions":
		return "sessions:" + w.Gap.String()
	}
	return ""
}

// perElement is how many windows each element is in: SIZE/PERIOD for
// sliding windows, else one (a session window before a GroupByKey is the
// element's own [t, t+gap)).
func (w windowKind) perElement() int {
	if w.Kind == "sliding" {
		return int(w.Size / w.Period)
	}
	return 1
}

// apply windows col, or returns it as it is in the global window.
func (w windowKind) apply(s beam.Scope, col beam.PCollection) beam.PCollection {
	switch w.Kind {
	case "fixed":
		return beam.WindowInto(s, window.NewFixedWindows(w.Size), col)
	case "sliding":
		return beam.WindowInto(s, window.NewSlidingWindows(w.Period, w.Size), col)
	case "sessions":
		return beam.WindowInto(s, window.NewSessions(w.Gap), col)
	}
	return col
}

// windowList reads a comma list of window kinds.
func windowList(s string) ([]windowKind, error) {
	var out []windowKind
	for _, f := range list(s) {
		w, err := parseWindow(f)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

package async

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/timers"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// TestDoFnsShipOnlyTheirConfig: Beam ships a DoFn as the JSON of its
// exported fields. Each of the transform's DoFns ships every field of the
// config and its state and timer fields, and nothing that an instance
// builds in Setup, even when that is set (a clock, a registry, coders).
func TestDoFnsShipOnlyTheirConfig(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	cfg := defaultConfig(t, s)
	config := jsonKeys(t, cfg)
	c := worker.Core{Config: cfg}
	c.SetClock(timers.System{})
	c.SetRegistry(state.NewRegistry())
	c.SetWaitPeriod(time.Second)
	c.PrepareCoders()
	for name, fn := range map[string]any{
		"streamFn":      newStreamFn(c),
		"bundleFn":      newBundleFn(c),
		"keyedBundleFn": newKeyedBundleFn(c),
		"escrowFn":      newEscrowFn(c),
	} {
		keys := jsonKeys(t, fn)
		for _, k := range config {
			if !contains(keys, k) {
				t.Errorf("%s does not ship the config's field %q", name, k)
			}
		}
		for _, k := range keys {
			if !contains(config, k) && !isStateOrTimer(fn, k) {
				t.Errorf("%s ships field %q; want only the config's fields and its state and timers", name, k)
			}
		}
	}
}

// jsonKeys is the top-level keys of v's JSON, sorted.
func jsonKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(s []string, x string) bool {
	i := sort.SearchStrings(s, x)
	return i < len(s) && s[i] == x
}

// isStateOrTimer reports whether field k of DoFn fn is state or a timer
// that Beam declares for it (its type is one of Beam's state or timer types).
func isStateOrTimer(fn any, k string) bool {
	f, ok := reflect.TypeOf(fn).Elem().FieldByName(k)
	if !ok {
		return false
	}
	p := f.Type.PkgPath()
	return strings.HasSuffix(p, "/core/state") || strings.HasSuffix(p, "/core/timers")
}

package runner

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
)

func TestCheck(t *testing.T) {
	old := *runners.Runner
	defer func() { *runners.Runner = old }()
	tests := []struct {
		flag, wantName string
		wantErr        bool
	}{
		{"", "prism", false},
		{"prism", "prism", false},
		{"direct", "direct", true},
		{"DirectRunner", "directrunner", true},
		{"universal", "universal", false},
	}
	for _, tc := range tests {
		*runners.Runner = tc.flag
		if got := Name(); got != tc.wantName {
			t.Errorf("Name() with --runner=%q = %q, want %q", tc.flag, got, tc.wantName)
		}
		err := Check()
		if (err != nil) != tc.wantErr {
			t.Errorf("Check() with --runner=%q = %v, want error %v", tc.flag, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--runner=prism") {
			t.Errorf("Check() error %q does not say to use prism", err)
		}
	}
}

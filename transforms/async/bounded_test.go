package async

import (
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

func TestIsUnbounded(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	bounded := beam.Create(s, 1, 2)
	unbounded := periodic.Impulse(s, time.Now(), mtime.MaxTimestamp.ToTime(), time.Second, false)
	if isUnbounded(bounded) {
		t.Errorf("isUnbounded(%v) = true, want false", bounded)
	}
	if !isUnbounded(unbounded) {
		t.Errorf("isUnbounded(%v) = false, want true", unbounded)
	}
}

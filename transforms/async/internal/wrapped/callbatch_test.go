package wrapped

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// testPair is the pair output of this package's tests (the front sets its
// own in its init).
type testPair struct{ key, value []byte }

func init() {
	SetPairOutput(reflect.TypeOf(testPair{}), func(k, v []byte) any { return testPair{k, v} })
}

// refusingEncoder fails to encode the value "bad".
type refusingEncoder struct{ beam.ElementEncoder }

func (e refusingEncoder) Encode(v any, w io.Writer) error {
	if v == "bad" {
		return errors.New("cannot encode bad")
	}
	return e.ElementEncoder.Encode(v, w)
}

// TestBatchPairThatCannotBeEncodedFailsItsElement: an output pair of one
// element that cannot be encoded fails that element for good, not the
// request; the other elements keep their outputs.
func TestBatchPairThatCannotBeEncodedFailsItsElement(t *testing.T) {
	str := reflect.TypeOf("")
	got := &BatchOutputs{outs: make([][]any, 3), pairs: &PairEncoder{
		key: beam.NewElementEncoder(str), value: refusingEncoder{beam.NewElementEncoder(str)}}}
	emit := func(i int, k, v string) {
		got.Emit([]reflect.Value{reflect.ValueOf(i), reflect.ValueOf(k), reflect.ValueOf(v)})
	}
	emit(0, "a", "fine")
	emit(1, "b", "bad")
	emit(1, "b", "fine")
	emit(2, "c", "fine")
	got.Close()
	outs, errs, err := got.Answer(nil, nil)
	if err != nil {
		t.Fatalf("answer: request error %v; want none", err)
	}
	for i, wantOuts := range []int{1, 0, 1} {
		if len(outs[i]) != wantOuts {
			t.Errorf("element %d has %d outputs; want %d", i, len(outs[i]), wantOuts)
		}
	}
	if errs[0] != nil || errs[2] != nil || !errors.As(errs[1], new(*PermanentError)) || !strings.Contains(errs[1].Error(), "cannot encode bad") {
		t.Errorf("errors %v; want element 1's alone, Permanent, naming the cause", errs)
	}
}

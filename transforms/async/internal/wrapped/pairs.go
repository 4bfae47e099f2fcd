package wrapped

// Key-value outputs travel through the transform as pairs of encoded bytes
// (the front's pair type, one concrete type for every K2 and V2) and become a
// PCollection<KV<K2, V2>> in a last step (the front's). Here: that pair type,
// the K2 and V2 a spec carries, and the encoding of one call's pairs.

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// pairType is the type of a pair output and newPair makes one from its key
// and value, each encoded with its coder: the front's (SetPairOutput). Beam
// names the step that splits pairs, and the result cache its keys, after
// that type, so it stays with the front whatever the code's layout.
var (
	pairType reflect.Type
	newPair  func(key, value []byte) any
)

// SetPairOutput sets the type of pair outputs and how one is made. The
// front calls it in its init, before any fn is inspected or called.
func SetPairOutput(t reflect.Type, make func(key, value []byte) any) {
	pairType, newPair = t, make
}

// PairTypes are K2 and V2 of a fn whose outputs are key-value pairs, as the
// spec carries them to workers.
type PairTypes struct {
	Key, Value beam.EncodedType
}

// PairEncoder makes the pair outputs of one call. Encoders are made per
// call: calls run concurrently.
type PairEncoder struct {
	key, value beam.ElementEncoder
}

func newPairEncoder(p *PairTypes) *PairEncoder {
	if p == nil {
		return nil
	}
	return &PairEncoder{key: beam.NewElementEncoder(p.Key.T), value: beam.NewElementEncoder(p.Value.T)}
}

// pair encodes one output pair.
func (e *PairEncoder) pair(k, v any) (any, error) {
	kb, err := Encode(e.key, k)
	if err != nil {
		return nil, fmt.Errorf("async: encoding an output key %v: %w", k, err)
	}
	vb, err := Encode(e.value, v)
	if err != nil {
		return nil, fmt.Errorf("async: encoding an output value %v: %w", v, err)
	}
	return newPair(kb, vb), nil
}

package async

// Pair outputs: a fn that emits key-value pairs gives kvOutputs, which a
// step after the transform splits into KV<K2, V2>.

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// kvOutput is one key-value output of the wrapped fn, the key and the value
// each encoded with its coder, on its way to the transform's
// PCollection<KV<K2, V2>>. Its name is in the job graph (the step that
// splits pairs) and in the result cache's keys: keep it.
type kvOutput struct {
	Key, Value []byte
}

var kvOutputType = reflect.TypeOf(kvOutput{})

// registerPairOutput tells the machinery how to make a kvOutput (see
// wrapped.SetPairOutput).
func registerPairOutput() {
	wrapped.SetPairOutput(kvOutputType, func(key, value []byte) any { return kvOutput{Key: key, Value: value} })
}

// splitPairsFn turns the transform's kvOutputs into KV<K2, V2>, each in its
// element's window with its timestamp (Beam keeps both through a ParDo).
type splitPairsFn struct {
	Pairs wrapped.PairTypes

	key, value beam.ElementDecoder
}

func (f *splitPairsFn) Setup() {
	f.key, f.value = beam.NewElementDecoder(f.Pairs.Key.T), beam.NewElementDecoder(f.Pairs.Value.T)
}

func (f *splitPairsFn) ProcessElement(o kvOutput, emit func(beam.X, beam.Y)) error {
	k, err := wrapped.Decode(f.key, o.Key)
	if err != nil {
		return fmt.Errorf("async: decoding an output key: %w", err)
	}
	v, err := wrapped.Decode(f.value, o.Value)
	if err != nil {
		return fmt.Errorf("async: decoding an output value: %w", err)
	}
	emit(k, v)
	return nil
}

// splitPairs applies splitPairsFn to out, a PCollection<kvOutput>.
func splitPairs(s beam.Scope, p wrapped.PairTypes, out beam.PCollection) (beam.PCollection, error) {
	outs, err := beam.TryParDo(s.Scope("Pairs"), &splitPairsFn{Pairs: p}, out,
		beam.TypeDefinition{Var: beam.XType, T: p.Key.T}, beam.TypeDefinition{Var: beam.YType, T: p.Value.T})
	if err != nil {
		return beam.PCollection{}, err
	}
	return outs[0], nil
}

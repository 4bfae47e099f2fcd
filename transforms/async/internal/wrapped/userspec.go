package wrapped

// The Spec: what describes the wrapped fn to workers, shipped inside the
// DoFn, and what it says of the fn's form.

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Spec is the serialisable description of the wrapped fn: either a
// registered DoFn struct (its type and the JSON of its exported fields) or a
// registered function.
type Spec struct {
	Type *beam.EncodedType `json:",omitempty"`
	JSON string            `json:",omitempty"`
	Func *Shipped          `json:",omitempty"`
	// Batch: the fn is BatchParDo's, with ProcessBatch (inspectbatch.go,
	// callbatch.go).
	Batch bool `json:",omitempty"`
	// Pairs: the fn outputs key-value pairs of these types (pairs.go).
	Pairs *PairTypes `json:",omitempty"`
	// Enrich: the fn is Enrich's lookup, called with the key only (a
	// struct's Lookup method), and answers are joined into records
	// (enrich.go).
	Enrich *EnrichSpec `json:",omitempty"`
}

// Method is the name of the struct method that is the wrapped fn's call.
func (s Spec) Method() string {
	if s.Enrich != nil {
		return "Lookup"
	}
	return "ProcessElement"
}

// BatchMethod is the name of the struct method that is a batch fn's call.
func (s Spec) BatchMethod() string {
	if s.Enrich != nil {
		return "LookupBatch"
	}
	return "ProcessBatch"
}

// HasRevert reports whether the wrapped fn is a DoFn struct with a Revert
// method.
func (s Spec) HasRevert() bool {
	if s.Type == nil || s.Enrich != nil {
		return false
	}
	_, ok := reflect.PointerTo(s.Type.T).MethodByName("Revert")
	return ok
}

// EnrichSpec is what the spec of an Enrich lookup carries besides the
// lookup: the join and the answer's type, with which the result cache
// encodes answers.
type EnrichSpec struct {
	Join   *Shipped
	Answer beam.EncodedType
}

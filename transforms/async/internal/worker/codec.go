package worker

// Encoding and decoding of keys and values with the input's coders, and the
// element identity computed from them.

import (
	"fmt"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// DecodeKey decodes an encoded key for an event; on failure (which the
// transform's own encoding rules out) the event shows the raw bytes.
func (f *Core) DecodeKey(kb string) any {
	k, err := wrapped.Decode(f.keyDec, []byte(kb))
	if err != nil {
		return []byte(kb)
	}
	return k
}

// DecodeValue decodes the value of an element of key read from bag state.
func (f *Core) DecodeValue(key any, vb []byte) (any, error) {
	value, err := wrapped.Decode(f.valDec, vb)
	if err != nil {
		return nil, fmt.Errorf("async: decoding a value of key %v from bag state: %w", key, err)
	}
	return value, nil
}

// Identify returns the element's ID within its key: what WithIDFn returns,
// or a hash of the encoded value.
func (f *Core) Identify(value any, encoded []byte) (string, error) {
	if f.IDFn == nil {
		return state.ValueID(encoded), nil
	}
	return terms.CallValueFn[string](f.IDFn, "ID", value)
}

package wrapped

// Encoding values with a Beam coder.

import (
	"bytes"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Encode encodes v with enc.
func Encode(enc beam.ElementEncoder, v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := enc.Encode(v, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode decodes b with dec.
func Decode(dec beam.ElementDecoder, b []byte) (any, error) {
	return dec.Decode(bytes.NewReader(b))
}

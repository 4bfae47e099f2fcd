package wrapped

import (
	"bytes"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Encoding values with a Beam coder, with a coder's panic turned into an
// error.

func Encode(enc beam.ElementEncoder, v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := enc.Encode(v, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func Decode(dec beam.ElementDecoder, b []byte) (any, error) {
	return dec.Decode(bytes.NewReader(b))
}

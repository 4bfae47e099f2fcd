package async

// The identity of an element's key and window in the shared pool.

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
)

// ownerOf names a key (encoded) and window as the owner of their elements'
// tasks in the pool: state and timers are per key and window, so two windows
// of one key are independent, and so are their elements. The key comes
// length-prefixed, then the window: nothing for the global window, its
// bounds for an interval window.
func ownerOf(kb []byte, w typex.Window) string {
	b := binary.AppendUvarint(make([]byte, 0, len(kb)+24), uint64(len(kb)))
	b = append(b, kb...)
	switch w := w.(type) {
	case nil, window.GlobalWindow:
	case window.IntervalWindow:
		b = binary.AppendVarint(b, int64(w.Start))
		b = binary.AppendVarint(b, int64(w.End))
	default:
		b = fmt.Appendf(b, "%T%v", w, w)
	}
	return string(b)
}

// keyOfOwner returns the encoded key of an owner made by ownerOf (or the
// owner itself if it is not one: a bundle's).
func keyOfOwner(owner string) string {
	n, k := binary.Uvarint([]byte(owner))
	if k <= 0 || n > uint64(len(owner)-k) {
		return owner
	}
	return owner[k : k+int(n)]
}

package async

// The start of an HTTP error response's body, for CheckResponse's error,
// read without taking it from the caller.

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxBodyExcerpt is how many bytes of a response's body CheckResponse's
// error quotes at most.
const maxBodyExcerpt = 512

// bodyExcerpt reads up to maxBodyExcerpt bytes (and one more, to know
// whether there are more) from resp.Body, puts them back in front of the
// rest (replayBody), and returns them as one line: whitespace and control
// characters folded to single spaces, trimmed, "…" at the end when cut, or
// "[binary body]" for bytes that are not UTF-8 text. It returns "" for an
// empty body and for none.
func bodyExcerpt(resp *http.Response) string {
	if resp.Body == nil || resp.Body == http.NoBody {
		return ""
	}
	buf := make([]byte, maxBodyExcerpt+1)
	n, err := io.ReadFull(resp.Body, buf)
	buf = buf[:n]
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil // the body ended: the next read says so again
	}
	if n > 0 || err != nil {
		resp.Body = &replayBody{rest: buf, err: err, body: resp.Body}
	}
	cut := n > maxBodyExcerpt
	if cut {
		end := maxBodyExcerpt
		for end > 0 && !utf8.RuneStart(buf[end]) {
			end--
		}
		buf = buf[:end]
	}
	if !utf8.Valid(buf) {
		return "[binary body]"
	}
	text := strings.Join(strings.FieldsFunc(string(buf), func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if cut && text != "" {
		text += "…"
	}
	return text
}

// replayBody is a response body whose first bytes were read already: it
// gives them again, then the error their read ended on (if not the body's
// end), then the rest of the body. Closing it closes the body.
type replayBody struct {
	rest []byte
	err  error
	body io.ReadCloser
}

func (r *replayBody) Read(p []byte) (int, error) {
	if len(r.rest) > 0 {
		n := copy(p, r.rest)
		r.rest = r.rest[n:]
		return n, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	return r.body.Read(p)
}

func (r *replayBody) Close() error { return r.body.Close() }

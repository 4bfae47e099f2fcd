package terms

// Failure records for people and for programs: the text of a key or a
// value (failureText), and DecodeFailure, which gives a record's key and
// value back as the input's K and V.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// maxFailureText is the most bytes of a key's or a value's text that a
// Failure record keeps; a longer text is cut there and marked (CutText).
const maxFailureText = 1024

// FailureText is Failure.KeyText or Failure.ValueText for v: JSON for a
// struct, a pointer to a struct, a map or a slice, a Go-quoted string for a
// []byte, Go's %v otherwise (and where JSON fails), cut at maxFailureText.
func FailureText(v any) string { return CutText(fullText(v)) }

// fullText is failureText before the cut.
func fullText(v any) string {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return fmt.Sprintf("%q", v)
		}
		return jsonText(v)
	case reflect.Struct, reflect.Map:
		return jsonText(v)
	case reflect.Pointer:
		if rv.Type().Elem().Kind() == reflect.Struct {
			return jsonText(v)
		}
	}
	return fmt.Sprint(v)
}

// jsonText is v as JSON (with <, > and & as they are), or Go's %v when v
// has no JSON form (a NaN, a channel, a cycle).
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// cutText keeps the first maxFailureText bytes of s (ending on a whole
// UTF-8 character) and says how long s was.
func CutText(s string) string {
	if len(s) <= maxFailureText {
		return s
	}
	end := maxFailureText
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return fmt.Sprintf("%s…[cut: %d bytes in all]", s[:end], len(s))
}

// quoteShort quotes s for an error, shortened to 80 bytes.
func QuoteShort(s string) string {
	if len(s) > 80 {
		end := 80
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		s = s[:end] + "…"
	}
	return fmt.Sprintf("%q", s)
}

package async

// Failure records for people and for programs: the text of a key or a
// value (failureText), and DecodeFailure, which gives a record's key and
// value back as the input's K and V.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// maxFailureText is the most bytes of a key's or a value's text that a
// failure record keeps; a longer text is cut there and marked (cutText).
const maxFailureText = 1024

// failureText is Failure.KeyText or Failure.ValueText for v: JSON for a
// struct, a pointer to a struct, a map or a slice, a Go-quoted string for a
// []byte, Go's %v otherwise (and where JSON fails), cut at maxFailureText.
func failureText(v any) string { return cutText(fullText(v)) }

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
func cutText(s string) string {
	if len(s) <= maxFailureText {
		return s
	}
	end := maxFailureText
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return fmt.Sprintf("%s…[cut: %d bytes in all]", s[:end], len(s))
}

// DecodeFailure returns the key and the value of the element that f
// records, as the input of ParDoWithFailures or BatchParDoWithFailures held
// them: K and V are that input's key and value types (PCollection<KV<K,
// V>>). f.Key and f.Value are the key and the value encoded with Beam's
// default coders for K and V (beam.NewElementEncoder), on every input,
// windowed or not, bounded or not.
//
// The error says which type was asked for and why it does not fit: the
// bytes do not decode as it, or what they decode to does not print as
// f.KeyText or f.ValueText (a record without those texts, as one built by
// hand, is decoded unchecked); and it names the common type (string, int,
// int64, float64, bool, []byte) that fits, if one does. It infers the
// coders at every call: decode failures where they are handled, not in a
// hot loop.
func DecodeFailure[K, V any](f Failure) (key K, value V, err error) {
	if key, err = decodeAs[K]("key", f.Key, f.KeyText); err != nil {
		return key, value, fmt.Errorf("async.DecodeFailure[%v, %v]: %w", reflect.TypeFor[K](), reflect.TypeFor[V](), err)
	}
	if value, err = decodeAs[V]("value", f.Value, f.ValueText); err != nil {
		return key, value, fmt.Errorf("async.DecodeFailure[%v, %v]: %w", reflect.TypeFor[K](), reflect.TypeFor[V](), err)
	}
	return key, value, nil
}

// decodeAs decodes b, the record's key or value (what) whose text is text,
// as a T.
func decodeAs[T any](what string, b []byte, text string) (T, error) {
	var zero T
	t := reflect.TypeFor[T]()
	v, err := decodeChecked(t, b, text)
	if err != nil {
		return zero, fmt.Errorf("the record's %s is not of type %v: %w%s", what, t, err, typeHint(t, b, text))
	}
	return v.Interface().(T), nil
}

// decodeChecked decodes b, one element encoded with Beam's coder for t, and
// checks that it prints as text (when text is not empty).
func decodeChecked(t reflect.Type, b []byte, text string) (v reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil { // beam.NewElementDecoder panics for a type without a coder
			err = fmt.Errorf("Beam has no coder for %v: %v", t, r)
		}
	}()
	r := bytes.NewReader(b)
	got, err := beam.NewElementDecoder(t).Decode(r)
	switch {
	case err != nil:
		return reflect.Value{}, err
	case r.Len() > 0:
		return reflect.Value{}, fmt.Errorf("%d of its %d bytes are left over", r.Len(), len(b))
	case got == nil:
		return reflect.Zero(t), nil
	}
	v = reflect.ValueOf(got)
	if v.Type() != t { // a coder may give a named type's underlying type
		if !v.Type().ConvertibleTo(t) {
			return reflect.Value{}, fmt.Errorf("it decodes as a %v", v.Type())
		}
		v = v.Convert(t)
	}
	if text != "" && !sameText(failureText(v.Interface()), text) && cutText(fmt.Sprint(v.Interface())) != text {
		return reflect.Value{}, errors.New("it decodes to " + quoteShort(failureText(v.Interface())) + ", but the record prints it as " + quoteShort(text))
	}
	return v, nil
}

// commonTypes are the types typeHint tries.
var commonTypes = []reflect.Type{
	reflect.TypeFor[string](), reflect.TypeFor[int](), reflect.TypeFor[int64](),
	reflect.TypeFor[float64](), reflect.TypeFor[bool](), reflect.TypeFor[[]byte](),
}

// typeHint names the common types other than asked that b decodes as,
// printing as text, if any.
func typeHint(asked reflect.Type, b []byte, text string) string {
	if text == "" {
		return ""
	}
	var fit []string
	for _, t := range commonTypes {
		if t == asked {
			continue
		}
		if _, err := decodeChecked(t, b, text); err == nil {
			fit = append(fit, t.String())
		}
	}
	if len(fit) == 0 {
		return ""
	}
	return " (it decodes as " + strings.Join(fit, " or ") + ": decode with the input's own types)"
}

// quoteShort quotes s for an error, shortened to 80 bytes.
func quoteShort(s string) string {
	if len(s) > 80 {
		end := 80
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		s = s[:end] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// sameText reports whether a decoded value's text matches the record's: the
// same, but for nil slices and maps, which the record prints as JSON null
// and Beam's coders decode as empty ones.
func sameText(decoded, recorded string) bool {
	if decoded == recorded {
		return true
	}
	empty := strings.NewReplacer("null", "", "[]", "", "{}", "")
	return empty.Replace(decoded) == empty.Replace(recorded)
}

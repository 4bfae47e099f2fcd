package async

// DecodeFailure: a failure record's key and value back as the types they had.

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

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
		return key, value, fmt.Errorf("async.DecodeFailure[%s, %s]: %w", wrapped.TypeName(reflect.TypeFor[K]()), wrapped.TypeName(reflect.TypeFor[V]()), err)
	}
	if value, err = decodeAs[V]("value", f.Value, f.ValueText); err != nil {
		return key, value, fmt.Errorf("async.DecodeFailure[%s, %s]: %w", wrapped.TypeName(reflect.TypeFor[K]()), wrapped.TypeName(reflect.TypeFor[V]()), err)
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
		return zero, fmt.Errorf("the record's %s is not of type %s: %w%s", what, wrapped.TypeName(t), err, typeHint(t, b, text))
	}
	return v.Interface().(T), nil
}

// decodeChecked decodes b, one element encoded with Beam's coder for t, and
// checks that it prints as text (when text is not empty).
func decodeChecked(t reflect.Type, b []byte, text string) (v reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil { // beam.NewElementDecoder panics for a type without a coder
			err = fmt.Errorf("Beam has no coder for %s: %v", wrapped.TypeName(t), r)
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
			return reflect.Value{}, fmt.Errorf("it decodes as a %s", wrapped.TypeName(v.Type()))
		}
		v = v.Convert(t)
	}
	if text != "" && !sameText(terms.FailureText(v.Interface()), text) && terms.CutText(fmt.Sprint(v.Interface())) != text {
		return reflect.Value{}, errors.New("it decodes to " + terms.QuoteShort(terms.FailureText(v.Interface())) + ", but the record prints it as " + terms.QuoteShort(text))
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

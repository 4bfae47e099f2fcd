package async

// Lifecycle events of elements (accepted, started, committed...), the
// Listener interface that receives them, and the per-process hub that
// delivers them with panics contained.

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

// inspectListeners checks the Listeners given to WithListener and returns
// what is shipped to workers, in the order given.
func inspectListeners(ls []Listener) ([]*terms.ListenerSpec, error) {
	specs := make([]*terms.ListenerSpec, 0, len(ls))
	for _, l := range ls {
		spec, err := inspectListener(l)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// inspectListener checks one Listener given to WithListener and returns
// what is shipped to workers.
func inspectListener(l Listener) (*terms.ListenerSpec, error) {
	t, err := wrapped.RegisteredStruct("WithListener", reflect.ValueOf(l))
	if err != nil {
		return nil, err
	}
	if v, ok := l.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("WithListener: %v: %w", t, err)
		}
	}
	body, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("WithListener: %v cannot be serialised as JSON of its exported fields: %w", t, err)
	}
	return &terms.ListenerSpec{Type: beam.EncodedType{T: t}, JSON: string(body)}, nil
}

// WithListener sends the transform's element events to l (see Listener).
// Given more than once, it adds a listener each time: every listener
// receives every event, in the order the options gave them (a listener's
// OnEvent returns before the next one's is called). Default: none, and no
// events are built.
func WithListener(l Listener) Option {
	return func(s *settings) {
		if l == nil || reflect.ValueOf(l).Kind() == reflect.Ptr && reflect.ValueOf(l).IsNil() {
			s.errs = append(s.errs, errors.New("WithListener: the listener is nil"))
			return
		}
		s.listeners = append(s.listeners, l)
	}
}

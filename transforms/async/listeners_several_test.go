package async

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
)

// inTurn is a Listener that writes its Name and each event's type to the
// log of its Test, one log for all the listeners of a test, so that the
// test can read in what order the listeners heard each event.
type inTurn struct{ Test, Name string }

var turns = struct {
	sync.Mutex
	log map[string][]string
}{log: map[string][]string{}}

func (l *inTurn) OnEvent(e Event) {
	turns.Lock()
	defer turns.Unlock()
	turns.log[l.Test] = append(turns.log[l.Test], l.Name+" "+string(e.Type))
}

func init() { beam.RegisterType(reflect.TypeOf(inTurn{})) }

// TestSeveralListenersHearEveryEventInOrder: WithListener given three
// times keeps all three; each hears every event of an element, in the
// order the options gave them, and a listener that panics between two
// others keeps neither from hearing.
func TestSeveralListenersHearEveryEventInOrder(t *testing.T) {
	name := runName(t) // its own gates and log under -count
	h := newHarness(t, &gated{Name: name}, reflect.TypeOf(""),
		WithListener(&inTurn{Test: name, Name: "first"}), WithListener(&panicky{}), WithListener(&inTurn{Test: name, Name: "second"}),
		WithMaxAttempts(2), WithBackoff(FixedBackoff(time.Millisecond)))
	book.planErrors(gateID(name, "k", 1), errors.New("transient"))
	book.open(gateID(name, "k", 1))
	if out, err := h.runBundle(h.bundleFn(), []bundleElem{{key: "k", v: 1}}); err != nil || len(out.outputs) != 1 {
		t.Fatalf("bundle = %v, %v; want one output", out.outputs, err)
	}
	var want []string
	for _, typ := range []EventType{EventAccepted, EventStarted, EventRetrying, EventStarted, EventSucceeded, EventCommitted} {
		want = append(want, "first "+string(typ), "second "+string(typ))
	}
	turns.Lock()
	got := turns.log[name]
	turns.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events heard:\n%q\nwant each event heard by first, then by second:\n%q", got, want)
	}
	if n := h.c.Events().Panics.Load(); n != int64(len(want)/2) {
		t.Errorf("panics counted = %d; want %d, one per event", n, len(want)/2)
	}
}

// TestHubClosesEveryListener: closing the hub closes each listener that
// can be closed and returns their errors.
func TestHubClosesEveryListener(t *testing.T) {
	a, b := &closing{err: errors.New("a failed")}, &closing{}
	h := &worker.Hub{Listeners: []*worker.Heard{{Listener: a}, {Listener: &panicky{}}, {Listener: b}}}
	if err := h.Close(); err == nil || err.Error() != "a failed" {
		t.Errorf("Close = %v; want a's error", err)
	}
	if !a.closed || !b.closed {
		t.Errorf("closed: a %v, b %v; want both", a.closed, b.closed)
	}
}

// closing is a Listener with a Close method.
type closing struct {
	closed bool
	err    error
}

func (*closing) OnEvent(Event) {}

func (c *closing) Close() error {
	c.closed = true
	return c.err
}

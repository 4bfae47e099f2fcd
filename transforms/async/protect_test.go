package async

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/asyncbeam/asyncbeam/state"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
	"github.com/asyncbeam/asyncbeam/transforms/guard"
)

func TestCheckResponse(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		code       int
		retryAfter string
		wantKind   string // "" for nil
		wantWait   time.Duration
	}{
		{200, "", "", 0},
		{204, "", "", 0},
		{429, "2", KindOverloaded, 2 * time.Second},
		{503, "", KindOverloaded, 0},
		{503, now.Add(3 * time.Second).UTC().Format(http.TimeFormat), KindOverloaded, 2 * time.Second}, // a date: about 3 s (whole seconds)
		{503, "soon", KindOverloaded, 0},
		{404, "", KindPermanent, 0},
		{400, "", KindPermanent, 0},
		{408, "", KindError, 0},
		{500, "", KindError, 0},
	} {
		req := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: "svc", Path: "/x", User: url.UserPassword("u", "secret")}}
		resp := &http.Response{StatusCode: tc.code, Status: http.StatusText(tc.code), Header: http.Header{}, Request: req}
		if tc.retryAfter != "" {
			resp.Header.Set("Retry-After", tc.retryAfter)
		}
		err := CheckResponse(resp)
		if tc.wantKind == "" {
			if err != nil {
				t.Errorf("%d: CheckResponse = %v; want nil", tc.code, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%d: CheckResponse = nil; want a %s error", tc.code, tc.wantKind)
			continue
		}
		if got := terms.KindOf(err); got != tc.wantKind {
			t.Errorf("%d %q: kind %q; want %q (error %v)", tc.code, tc.retryAfter, got, tc.wantKind, err)
		}
		if wait := worker.OverloadWait(err); wait < tc.wantWait || wait > tc.wantWait+time.Second {
			t.Errorf("%d %q: wait %v; want %v (to the second)", tc.code, tc.retryAfter, wait, tc.wantWait)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%d: error %q shows the URL's password", tc.code, err)
		}
	}
}

func TestClassifyAndPreviousError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want guard.Outcome
	}{
		{nil, guard.Succeeded},
		{Overloaded(errors.New("429")), guard.Overload},
		{&terms.TimeoutError{Limit: time.Second}, guard.TimedOut},
		{Permanent(errors.New("no")), guard.Failed},
		{errors.New("plain"), guard.Failed},
	} {
		if got := worker.Classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
	// A retry from bag state shows the gate whether its last attempt was an
	// overload, which is what the retry budget counts.
	if ok, _ := guard.IsOverloaded(worker.PreviousError(stateEnvelope(1, KindOverloaded))); !ok {
		t.Error("previousError of an overloaded envelope is not an overload")
	}
	if ok, _ := guard.IsOverloaded(worker.PreviousError(stateEnvelope(1, KindError))); ok {
		t.Error("previousError of an ordinary failure is an overload")
	}
	if err := worker.PreviousError(stateEnvelope(0, "")); err != nil {
		t.Errorf("previousError of a new element = %v; want nil", err)
	}
}

func stateEnvelope(attempts int, kind string) state.Envelope {
	return state.Envelope{Attempts: attempts, LastKind: kind, LastError: "last"}
}

// TestOverloadThreshold: the worker's throttle paces once the service
// refuses more than WithOverloadThreshold's share, 0.2 by default and for a
// config made without the options.
func TestOverloadThreshold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []Option
		wantK float64
	}{
		{"default", nil, 1.25},
		{"a half", []Option{WithOverloadThreshold(0.5)}, 2},
		{"a tenth", []Option{WithOverloadThreshold(0.1)}, 1 / 0.9},
	} {
		set, err := resolve(tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := set.protect.ThrottleK(); got < tc.wantK-1e-9 || got > tc.wantK+1e-9 {
			t.Errorf("%s: throttle K = %v, want %v", tc.name, got, tc.wantK)
		}
	}
	if got := (terms.Protection{}).ThrottleK(); got != guard.ThrottleK(DefaultOverloadThreshold) {
		t.Errorf("a config without the threshold: K = %v, want the default's %v", got, guard.ThrottleK(DefaultOverloadThreshold))
	}
}

package async

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
)

// TestCheckResponseBody: the error quotes the start of the service's body,
// and the caller still reads the whole body, from its start, and closes it.
func TestCheckResponseBody(t *testing.T) {
	long := strings.Repeat("x", 2000)
	accents := strings.Repeat("é", 600) // 1200 bytes: the cut falls inside a character
	tests := []struct {
		name     string
		method   string
		code     int
		body     string
		wantErr  string // the error's end; "" for nil
		wantKind string
	}{
		{"2xx: body untouched", http.MethodGet, 200, "fine", "", ""},
		{"service's reason", http.MethodGet, 400, "unknown sku\n", "400 Bad Request: unknown sku", KindPermanent},
		{"JSON on lines, folded", http.MethodPost, 422, "{\n\t\"error\": \"qty < 0\"\n}\n", `422 Unprocessable Entity: { "error": "qty < 0" }`, KindPermanent},
		{"no body", http.MethodGet, 500, "", "500 Internal Server Error", KindError},
		{"HEAD: no body", http.MethodHead, 404, "not here", "404 Not Found", KindPermanent},
		{"long body cut", http.MethodGet, 503, long, "503 Service Unavailable: " + long[:maxBodyExcerpt] + "…", KindOverloaded},
		{"cut on a whole character", http.MethodGet, 500, accents, "500 Internal Server Error: " + accents[:maxBodyExcerpt] + "…", KindError},
		{"exactly the limit: not cut", http.MethodGet, 500, long[:maxBodyExcerpt], "500 Internal Server Error: " + long[:maxBodyExcerpt], KindError},
		{"binary", http.MethodGet, 502, "\xff\xfe\x00\x01", "502 Bad Gateway: [binary body]", KindError},
		{"control characters", http.MethodGet, 429, "slow\x00down\r\n", "429 Too Many Requests: slow down", KindOverloaded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
				w.WriteHeader(tc.code)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			req, _ := http.NewRequest(tc.method, srv.URL+"/orders", nil)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, srv.URL, err)
			}
			defer resp.Body.Close() // the original body, as callers write it
			original := resp.Body
			err = CheckResponse(resp)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("CheckResponse = %v; want nil", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("CheckResponse = nil; want an error ending %q", tc.wantErr)
			case tc.wantErr != "":
				if want := tc.method + " " + srv.URL + "/orders: " + tc.wantErr; !strings.HasSuffix(err.Error(), want) {
					t.Errorf("CheckResponse = %q; want it to end %q", err, want)
				}
				if got := terms.KindOf(err); got != tc.wantKind {
					t.Errorf("kind %q; want %q", got, tc.wantKind)
				}
			}
			if tc.wantErr == "" && resp.Body != original {
				t.Errorf("CheckResponse replaced the body of a %d response", tc.code)
			}
			body, rerr := io.ReadAll(resp.Body)
			wantBody := tc.body
			if tc.method == http.MethodHead {
				wantBody = ""
			}
			if rerr != nil || string(body) != wantBody {
				t.Errorf("body after CheckResponse = %q, %v; want %q (all of it)", body, rerr, wantBody)
			}
			if cerr := resp.Body.Close(); cerr != nil {
				t.Errorf("closing the body: %v", cerr)
			}
		})
	}
}

// TestCheckResponseClosesNothing: the caller's body is never closed by
// CheckResponse; closing what resp.Body is afterwards closes the original.
func TestCheckResponseClosesNothing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unknown sku", http.StatusBadRequest)
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	original := resp.Body
	if err := CheckResponse(resp); err == nil || !strings.HasSuffix(err.Error(), "400 Bad Request: unknown sku") {
		t.Fatalf("CheckResponse = %v; want the service's reason", err)
	}
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "unknown sku\n" {
		t.Errorf("body = %q, %v; want %q", b, err, "unknown sku\n")
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := original.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("reading the original body after Close = %v; want a closed body", err)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// startService serves GET /call?us=D on loopback, answering after D
// microseconds.
func startService() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /call", func(w http.ResponseWriter, r *http.Request) {
		us, _ := strconv.ParseInt(r.URL.Query().Get("us"), 10, 64)
		select {
		case <-time.After(time.Duration(us) * time.Microsecond):
			io.WriteString(w, "ok")
		case <-r.Context().Done():
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("bench service:", err)
		}
	}()
	return "http://" + ln.Addr().String() + "/call", func() { srv.Shutdown(context.Background()); <-done }, nil
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}, Timeout: 30 * time.Second}

func httpCall(ctx context.Context, url string, d time.Duration) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"?us="+strconv.FormatInt(d.Microseconds(), 10), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("service answered %s", resp.Status)
	}
	return nil
}

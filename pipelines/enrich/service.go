package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// service is the enrichment web service the job starts on loopback when no
// --service_url is given. POST /enrich with a JSON record answers, after the
// configured latency, with fields derived from the record; a share of calls
// (the error rate) answers 503 instead.
type service struct {
	latency   time.Duration
	errorRate float64

	calls, failures atomic.Int64
	inFlight        atomic.Int64
	peak            atomic.Int64

	srv *http.Server
	wg  sync.WaitGroup
	url string
}

// enrichment is what the service adds to a record.
type enrichment struct {
	Segment   string  `json:"segment"`
	RiskScore float64 `json:"risk_score"`
	Region    string  `json:"region"`
}

var regions = map[string]string{
	"DE": "EMEA", "FR": "EMEA", "GB": "EMEA", "NL": "EMEA", "ES": "EMEA", "IT": "EMEA", "PL": "EMEA", "SE": "EMEA",
	"US": "AMER", "BR": "AMER", "JP": "APAC", "IN": "APAC",
}

// startService listens on a free loopback port and serves until stop.
func startService(latency time.Duration, errorRate float64) (*service, error) {
	if errorRate < 0 || errorRate > 1 {
		return nil, fmt.Errorf("--error_rate=%v: want a share between 0 and 1", errorRate)
	}
	if latency < 0 {
		return nil, fmt.Errorf("--latency=%v: want >= 0", latency)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the loopback enrichment service: %w", err)
	}
	s := &service{latency: latency, errorRate: errorRate, url: "http://" + ln.Addr().String() + "/enrich"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /enrich", s.enrich)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("enrichment service stopped: %v\n", err)
		}
	}()
	return s, nil
}

func (s *service) enrich(w http.ResponseWriter, r *http.Request) {
	now := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		old := s.peak.Load()
		if now <= old || s.peak.CompareAndSwap(old, now) {
			break
		}
	}
	s.calls.Add(1)
	var rec map[string]any
	if err := json.NewDecoder(r.Body).Decode(&rec); err != nil {
		http.Error(w, "body is not a JSON object: "+err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case <-time.After(s.latency):
	case <-r.Context().Done():
		return
	}
	if s.errorRate > 0 && rand.Float64() < s.errorRate {
		s.failures.Add(1)
		http.Error(w, "enrichment backend unavailable", http.StatusServiceUnavailable)
		return
	}
	json.NewEncoder(w).Encode(enrich(rec))
}

// enrich derives the added fields deterministically from the record.
func enrich(rec map[string]any) enrichment {
	amount, _ := rec["amount"].(float64)
	country, _ := rec["country"].(string)
	h := fnv.New32a()
	fmt.Fprint(h, rec["customer_id"])
	segment := []string{"new", "regular", "loyal", "vip"}[h.Sum32()%4]
	region := regions[country]
	if region == "" {
		region = "OTHER"
	}
	risk := float64(h.Sum32()%100)/200 + min(amount/2000, 0.5)
	return enrichment{Segment: segment, RiskScore: float64(int(risk*1000)) / 1000, Region: region}
}

// stop shuts the server down and waits for it.
func (s *service) stop(ctx context.Context) {
	s.srv.Shutdown(ctx)
	s.wg.Wait()
}

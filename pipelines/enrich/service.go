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
// (the error rate) answers 500 instead. POST /enrich/batch takes a JSON
// list of records and answers a list, one entry per record (its fields, or
// {"error": ...} for one that is not a JSON object), after the latency plus
// the per-item cost for each record: one call, many records. POST
// /enrich/profile takes {"customer_id": X} and answers X's profile; POST
// /enrich/profile/batch takes a JSON list of customer IDs and answers a
// list of profiles, one per ID.
//
// With a capacity (serviceLimits) it serves at most that many calls at once
// at its latency, queues as many more (their latency grows by the wait), and
// answers 503 with Retry-After past that; with a rate it answers 429 with
// Retry-After to the calls past that many in the current second.
type service struct {
	latency   time.Duration
	itemCost  time.Duration // added latency per record of a batch call
	errorRate float64
	limits    serviceLimits
	serving   *capacity // nil without a capacity
	started   time.Time

	calls, failures, overloaded atomic.Int64
	items                       atomic.Int64 // records in the calls (one per call but for batch calls)
	inFlight                    atomic.Int64
	peak                        atomic.Int64

	rateMu     sync.Mutex
	rateSecond int64 // the second (since start) rateCount counts
	rateCount  int
	arrivals   []slot // calls in each 100 ms since start

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

// serviceLimits are the loopback service's capacity and rate (zero: none),
// a later capacity from a time after its start, and the share of calls it
// sheds at random (answers 503, whatever the load).
type serviceLimits struct {
	Capacity        int
	Rate            int
	CapacityLater   int
	CapacityLaterAt time.Duration
	Shed            float64
}

func (l serviceLimits) validate() error {
	switch {
	case l.Capacity < 0 || l.Rate < 0 || l.CapacityLater < 0:
		return fmt.Errorf("--service_capacity=%d, --service_rate=%d, --service_capacity_later=%d: want numbers >= 0", l.Capacity, l.Rate, l.CapacityLater)
	case !(l.Shed >= 0 && l.Shed <= 1):
		return fmt.Errorf("--overload_rate=%v: want a share between 0 and 1", l.Shed)
	case l.CapacityLater > 0 && (l.Capacity == 0 || l.CapacityLaterAt <= 0):
		return fmt.Errorf("--service_capacity_later=%d needs --service_capacity and --service_capacity_at > 0", l.CapacityLater)
	}
	return nil
}

// startService listens on a free loopback port and serves until stop.
func startService(latency, itemCost time.Duration, errorRate float64, limits serviceLimits) (*service, error) {
	if errorRate < 0 || errorRate > 1 {
		return nil, fmt.Errorf("--error_rate=%v: want a share between 0 and 1", errorRate)
	}
	if latency < 0 || itemCost < 0 {
		return nil, fmt.Errorf("--latency=%v, --batch_item_cost=%v: want durations >= 0", latency, itemCost)
	}
	if err := limits.validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the loopback enrichment service: %w", err)
	}
	s := &service{latency: latency, itemCost: itemCost, errorRate: errorRate, limits: limits, started: time.Now(), url: "http://" + ln.Addr().String() + "/enrich"}
	if limits.Capacity > 0 {
		s.serving = newCapacity(limits.Capacity)
		if limits.CapacityLater > 0 {
			time.AfterFunc(limits.CapacityLaterAt, func() { s.serving.resize(limits.CapacityLater) })
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /enrich", s.enrich)
	mux.HandleFunc("POST /enrich/batch", s.enrichBatch)
	mux.HandleFunc("POST /enrich/profile", s.profile)
	mux.HandleFunc("POST /enrich/profile/batch", s.profileBatch)
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
	done := s.arrive(r)
	defer done()
	var rec map[string]any
	if err := json.NewDecoder(r.Body).Decode(&rec); err != nil {
		http.Error(w, "body is not a JSON object: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.items.Add(1)
	if s.serve(w, r, s.latency) {
		json.NewEncoder(w).Encode(enrich(rec))
	}
}

// enrichBatch is enrich for a list of records: one call.
func (s *service) enrichBatch(w http.ResponseWriter, r *http.Request) {
	done := s.arrive(r)
	defer done()
	var recs []json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&recs); err != nil {
		http.Error(w, "body is not a JSON list: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.items.Add(int64(len(recs)))
	if !s.serve(w, r, s.latency+time.Duration(len(recs))*s.itemCost) {
		return
	}
	out := make([]any, len(recs))
	for i, raw := range recs {
		var rec map[string]any
		if err := json.Unmarshal(raw, &rec); err != nil || rec == nil {
			out[i] = map[string]string{"error": fmt.Sprintf("record %d is not a JSON object", i)}
			continue
		}
		out[i] = enrich(rec)
	}
	json.NewEncoder(w).Encode(out)
}

// profile answers a customer's profile: {"customer_id": X} in, the fields
// of enrich that depend on the customer alone out (--lookup_by_customer).
func (s *service) profile(w http.ResponseWriter, r *http.Request) {
	done := s.arrive(r)
	defer done()
	var req struct {
		Customer string `json:"customer_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Customer == "" {
		http.Error(w, "want {\"customer_id\": ...}", http.StatusBadRequest)
		return
	}
	s.items.Add(1)
	if s.serve(w, r, s.latency) {
		json.NewEncoder(w).Encode(customerProfile(req.Customer))
	}
}

// profileBatch answers the profiles of a list of customers, in its order
// (--lookup_by_customer with --batch_size).
func (s *service) profileBatch(w http.ResponseWriter, r *http.Request) {
	done := s.arrive(r)
	defer done()
	var customers []string
	if err := json.NewDecoder(r.Body).Decode(&customers); err != nil {
		http.Error(w, "want a JSON list of customer IDs: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.items.Add(int64(len(customers)))
	if !s.serve(w, r, s.latency+time.Duration(len(customers))*s.itemCost) {
		return
	}
	out := make([]map[string]any, len(customers))
	for i, c := range customers {
		out[i] = customerProfile(c)
	}
	json.NewEncoder(w).Encode(out)
}

// customerProfile is the part of enrich that depends on the customer only.
func customerProfile(customer string) map[string]any {
	h := fnv.New32a()
	fmt.Fprint(h, customer)
	return map[string]any{"segment": []string{"new", "regular", "loyal", "vip"}[h.Sum32()%4], "customer_risk": float64(h.Sum32()%100) / 200}
}

// arrive counts a call as it arrives; the returned func ends it.
func (s *service) arrive(r *http.Request) (done func()) {
	now := s.inFlight.Add(1)
	for {
		old := s.peak.Load()
		if now <= old || s.peak.CompareAndSwap(old, now) {
			break
		}
	}
	s.calls.Add(1)
	retry := r.Header.Get("X-Attempt") != "" && r.Header.Get("X-Attempt") != "1"
	s.count(func(c *slot) {
		c.arrived++
		if retry {
			c.retries++
		}
	})
	return func() { s.inFlight.Add(-1) }
}

// serve applies the service's rate, capacity, latency and error rate to a
// call, and reports whether it is to be answered (otherwise it was).
func (s *service) serve(w http.ResponseWriter, r *http.Request, latency time.Duration) bool {
	if !s.underRate() {
		s.refuse(w, http.StatusTooManyRequests, "rate limit exceeded")
		return false
	}
	if s.limits.Shed > 0 && rand.Float64() < s.limits.Shed {
		s.refuse(w, http.StatusServiceUnavailable, "shed")
		return false
	}
	if s.serving != nil {
		if !s.serving.enter(r.Context()) {
			if r.Context().Err() == nil {
				s.refuse(w, http.StatusServiceUnavailable, "over capacity")
			}
			return false
		}
		defer s.serving.leave()
	}
	select {
	case <-time.After(latency):
	case <-r.Context().Done():
		return false
	}
	if s.errorRate > 0 && rand.Float64() < s.errorRate {
		s.failures.Add(1)
		http.Error(w, "enrichment backend failed", http.StatusInternalServerError)
		return false
	}
	s.count(func(c *slot) { c.served++ })
	return true
}

// refuse answers an overload, asking the caller to wait a second.
func (s *service) refuse(w http.ResponseWriter, code int, why string) {
	s.overloaded.Add(1)
	s.count(func(c *slot) { c.refused++ })
	w.Header().Set("Retry-After", "1")
	http.Error(w, why, code)
}

// underRate counts a call against the rate of the current second and says
// whether it is within it.
func (s *service) underRate() bool {
	if s.limits.Rate == 0 {
		return true
	}
	sec := int64(time.Since(s.started) / time.Second)
	s.rateMu.Lock()
	defer s.rateMu.Unlock()
	if sec != s.rateSecond {
		s.rateSecond, s.rateCount = sec, 0
	}
	s.rateCount++
	return s.rateCount <= s.limits.Rate
}

// slot counts the calls of 100 ms: arrived, served (answered with an
// enrichment), refused (429 or 503), and the retries among those arrived
// (an X-Attempt header above 1).
type slot struct{ arrived, served, refused, retries int64 }

// count adds to the slot of now.
func (s *service) count(add func(*slot)) {
	i := int(time.Since(s.started) / (100 * time.Millisecond))
	s.rateMu.Lock()
	defer s.rateMu.Unlock()
	for len(s.arrivals) <= i {
		s.arrivals = append(s.arrivals, slot{})
	}
	add(&s.arrivals[i])
}

// perWindow returns the sums of each window of d (a multiple of 100 ms)
// since the start, the last partial window left out.
func (s *service) perWindow(d time.Duration) []slot {
	n := int(d / (100 * time.Millisecond))
	s.rateMu.Lock()
	defer s.rateMu.Unlock()
	var out []slot
	for i := 0; i+n <= len(s.arrivals); i += n {
		var sum slot
		for _, c := range s.arrivals[i : i+n] {
			sum.arrived += c.arrived
			sum.served += c.served
			sum.refused += c.refused
			sum.retries += c.retries
		}
		out = append(out, sum)
	}
	return out
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

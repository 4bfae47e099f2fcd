// Command quickstart is the README's complete program: a stream of orders,
// priced through an HTTP service by async.ParDoWithFailures, on embedded
// prism by default (any runner through --runner and its flags).
//
//	go run ./pipelines/quickstart
//
// It starts the pricing service itself, on loopback (20 ms a call; the SKU
// "gone" is unknown and fails for good), and prints each priced order and
// each failure record, then a count of both.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/runner"
	"github.com/asyncbeam/asyncbeam/transforms/async"
)

var (
	orderCount = flag.Int("orders", 100, "orders in the stream, one every 20 ms")
	every      = 20 * time.Millisecond
)

// Order is an input record, Priced an output.
type Order struct {
	ID  int64
	SKU string
	Qty int
}

type Priced struct {
	Order Order
	Cents int64
}

// priceFn is the DoFn you already have: one blocking call per element.
type priceFn struct {
	URL    string
	client *http.Client
}

func (f *priceFn) Setup() { f.client = &http.Client{Timeout: 10 * time.Second} }

func (f *priceFn) ProcessElement(ctx context.Context, sku string, o Order) (Priced, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL+"/price?sku="+url.QueryEscape(sku), nil)
	if err != nil {
		return Priced{}, async.Permanent(err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return Priced{}, err
	}
	defer resp.Body.Close()
	if err := async.CheckResponse(resp); err != nil {
		return Priced{}, err
	}
	var cents int64
	if err := json.NewDecoder(resp.Body).Decode(&cents); err != nil {
		return Priced{}, err
	}
	return Priced{Order: o, Cents: cents * int64(o.Qty)}, nil
}

// orderAt makes the order of the stream's tick at ts: the source stands in
// for your Kafka or Pub/Sub read.
type orderAt struct{ StartMs, EveryMs int64 }

func (f *orderAt) ProcessElement(ts beam.EventTime, _ []byte) Order {
	n := (int64(ts) - f.StartMs) / f.EveryMs
	skus := []string{"apple", "pear", "fig", "plum", "kiwi", "lime", "date", "yuzu", "sloe", "gone"}
	return Order{ID: n, SKU: skus[n%int64(len(skus))], Qty: 1 + int(n%3)}
}

func bySKU(o Order) (string, Order) { return o.SKU, o }

// Counted by the steps after the transform (the worker runs in this
// process on embedded prism and LOOPBACK).
var pricedN, failedN atomic.Int64

func printPriced(p Priced) {
	pricedN.Add(1)
	fmt.Printf("order %d (%s x%d): %d cents\n", p.Order.ID, p.Order.SKU, p.Order.Qty, p.Cents)
}

func printFailure(f async.Failure) error {
	_, o, err := async.DecodeFailure[string, Order](f)
	if err != nil {
		return err
	}
	failedN.Add(1)
	fmt.Printf("order %d (%s) failed after %d attempt(s), kind %s: %s\n", o.ID, o.SKU, f.Attempts, f.Kind, f.Error)
	return nil
}

func init() {
	register.DoFn3x2[context.Context, string, Order, Priced, error](&priceFn{})
	register.DoFn2x1[beam.EventTime, []byte, Order](&orderAt{})
	register.Function1x2(bySKU)
	register.Function1x0(printPriced)
	register.Function1x1(printFailure)
}

// README quickstart
func main() {
	flag.Parse() // Beam's flags: --runner, --endpoint, ...
	beam.Init()  // before anything else: a worker process starts here
	srv := httptest.NewServer(http.HandlerFunc(price))
	defer srv.Close()

	p, s := beam.NewPipelineWithRoot()
	start := time.Now().Add(time.Second)
	end := start.Add(time.Duration(*orderCount) * every)
	ticks := periodic.Impulse(s, start, end, every, false) // unbounded: one tick per order
	stream := beam.ParDo(s, &orderAt{StartMs: start.UnixMilli(), EveryMs: every.Milliseconds()}, ticks)
	orders := beam.WindowInto(s, window.NewFixedWindows(time.Minute), stream)
	priced, failures := async.ParDoWithFailures(s, &priceFn{URL: srv.URL}, beam.ParDo(s, bySKU, orders),
		async.WithParallelism(32), async.WithCallTimeout(2*time.Second), async.WithMaxAttempts(3),
		async.WithCallbackFrequency(200*time.Millisecond))
	beam.ParDo0(s, printPriced, priced)
	beam.ParDo0(s, printFailure, failures)

	if _, err := runner.Run(context.Background(), p); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("priced=%d failed=%d\n", pricedN.Load(), failedN.Load())
}

// END quickstart

// price is the pricing service: 100 cents per letter of the SKU, after
// 20 ms; the SKU "gone" is unknown (404, a permanent failure).
func price(w http.ResponseWriter, r *http.Request) {
	time.Sleep(20 * time.Millisecond)
	sku := r.URL.Query().Get("sku")
	if sku == "gone" || sku == "" {
		http.Error(w, "unknown SKU", http.StatusNotFound)
		return
	}
	if err := json.NewEncoder(w).Encode(int64(len(sku)) * 100); err != nil && !errors.Is(err, http.ErrHandlerTimeout) {
		log.Print(err)
	}
}

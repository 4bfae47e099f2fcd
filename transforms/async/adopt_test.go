package async_test

// The README's adoption walk-through, step by step, as code that runs: each
// block between "// README <name>" and "// END <name>" is quoted verbatim
// by README.md (TestREADMEQuotesTheWalkThrough checks it), and
// TestAdoptionWalkThrough runs every step on prism against a loopback
// pricing service.

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/asyncbeam/asyncbeam/transforms/async"
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

// README step1
// priceFn is the DoFn you already have: one blocking call per element.
type priceFn struct {
	URL    string
	client *http.Client
}

func (f *priceFn) Setup() { f.client = &http.Client{Timeout: 10 * time.Second} }

func (f *priceFn) ProcessElement(ctx context.Context, sku string, o Order) (Priced, error) {
	var cents int64
	if err := getJSON(ctx, f.client, f.URL+"/price?sku="+url.QueryEscape(sku), &cents); err != nil {
		return Priced{}, err
	}
	return Priced{Order: o, Cents: cents * int64(o.Qty)}, nil
}

func bySKU(o Order) (string, Order) { return o.SKU, o }

func init() {
	register.DoFn3x2[context.Context, string, Order, Priced, error](&priceFn{})
	register.Function1x2(bySKU)
}

// END step1

// README getJSON
// getJSON calls url and decodes its JSON answer into v. CheckResponse makes
// 429 and 503 overload errors and other 4xx permanent ones, and keeps what
// the service said.
func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return async.Permanent(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := async.CheckResponse(resp); err != nil {
		return err
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// END getJSON

// README step2
// logFailure gets the order back from its failure record.
func logFailure(f async.Failure) error {
	sku, order, err := async.DecodeFailure[string, Order](f)
	if err != nil {
		return err
	}
	log.Printf("order %d (%s) failed after %d attempt(s), kind %s: %s", order.ID, sku, f.Attempts, f.Kind, f.Error)
	return nil
}

func init() { register.Function1x1(logFailure) }

// END step2

// priceBatch prices many orders in one request.
type priceBatch struct {
	URL    string
	client *http.Client
}

func (f *priceBatch) Setup() { f.client = &http.Client{Timeout: 10 * time.Second} }

// README step3
func (f *priceBatch) ProcessBatch(ctx context.Context, skus []string, orders []Order, emit func(int, Priced)) error {
	var cents []int64
	if err := getJSON(ctx, f.client, f.URL+"/prices?skus="+url.QueryEscape(strings.Join(skus, ",")), &cents); err != nil {
		return err
	}
	for i, o := range orders {
		emit(i, Priced{Order: o, Cents: cents[i] * int64(o.Qty)})
	}
	return nil
}

func init() { beam.RegisterType(reflect.TypeOf((*priceBatch)(nil)).Elem()) }

// END step3

// priceLookup is called once per SKU, joinPrice once per order.
type priceLookup struct {
	URL    string
	client *http.Client
}

func (l *priceLookup) Setup() { l.client = &http.Client{Timeout: 10 * time.Second} }

// README step4
func (l *priceLookup) Lookup(ctx context.Context, sku string) (int64, error) {
	var cents int64
	err := getJSON(ctx, l.client, l.URL+"/price?sku="+url.QueryEscape(sku), &cents)
	return cents, err
}

func joinPrice(o Order, cents int64) Priced { return Priced{Order: o, Cents: cents * int64(o.Qty)} }

func init() {
	beam.RegisterType(reflect.TypeOf((*priceLookup)(nil)).Elem())
	register.Function2x1(joinPrice)
}

// END step4

// pricingService answers /price?sku=S with a price in cents (its length ×
// 100) and /prices?skus=A,B with a list; the SKU "gone" is unknown (400).
func pricingService(t *testing.T) *httptest.Server {
	price := func(sku string) (int64, bool) { return int64(len(sku)) * 100, sku != "gone" }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		var answer any
		switch r.URL.Path {
		case "/price":
			p, ok := price(r.URL.Query().Get("sku"))
			if !ok {
				http.Error(w, "unknown sku", http.StatusBadRequest)
				return
			}
			answer = p
		case "/prices":
			var ps []int64
			for _, sku := range strings.Split(r.URL.Query().Get("skus"), ",") {
				p, _ := price(sku)
				ps = append(ps, p)
			}
			answer = ps
		default:
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// someOrders are n orders over four SKUs, one in ten for the unknown one.
func someOrders(n int) []Order {
	skus := []string{"a", "bb", "ccc", "dddd"}
	out := make([]Order, n)
	for i := range out {
		sku := skus[i%len(skus)]
		if i%10 == 9 {
			sku = "gone"
		}
		out[i] = Order{ID: int64(i), SKU: sku, Qty: 1 + i%3}
	}
	return out
}

// orderAt makes the order of an impulse's tick (one every 50 ms).
type orderAt struct{ StartMs int64 }

func (f *orderAt) ProcessElement(ts beam.EventTime, _ []byte) Order {
	return someOrders(1 + int((int64(ts)-f.StartMs)/50))[int((int64(ts)-f.StartMs)/50)]
}

func pricedText(p Priced) string { return fmt.Sprintf("%d:%d", p.Order.ID, p.Cents) }

func init() {
	register.DoFn2x1[beam.EventTime, []byte, Order](&orderAt{})
	register.Function1x1(pricedText)
}

// wantPriced is what pricing the known orders of someOrders(n) gives.
func wantPriced(n int) []any {
	var want []any
	for _, o := range someOrders(n) {
		if o.SKU != "gone" {
			want = append(want, fmt.Sprintf("%d:%d", o.ID, int64(len(o.SKU))*100*int64(o.Qty)))
		}
	}
	return want
}

// TestAdoptionWalkThrough runs each step of the README's walk-through.
func TestAdoptionWalkThrough(t *testing.T) {
	srv := pricingService(t)
	const n = 60
	t.Run("step1 per element", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		orders := beam.CreateList(s, someOrders(n)[:9]) // no unknown SKU: a failure would fail the pipeline
		// README step1-pipeline
		keyed := beam.ParDo(s, bySKU, orders)
		priced := async.ParDo(s, &priceFn{URL: srv.URL}, keyed, async.WithParallelism(32))
		// END step1-pipeline
		passert.Equals(s, beam.ParDo(s, pricedText, priced), wantPriced(9)...)
		ptest.RunAndValidate(t, p)
	})
	t.Run("step2 failures", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		keyed := beam.ParDo(s, bySKU, beam.CreateList(s, someOrders(n)))
		// README step2-pipeline
		priced, failures := async.ParDoWithFailures(s, &priceFn{URL: srv.URL}, keyed,
			async.WithCallTimeout(2*time.Second), async.WithMaxAttempts(3))
		beam.ParDo0(s, logFailure, failures)
		// END step2-pipeline
		passert.Equals(s, beam.ParDo(s, pricedText, priced), wantPriced(n)...)
		passert.Count(s, failures, "failures", n/10)
		ptest.RunAndValidate(t, p)
	})
	t.Run("step3 batches", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		keyed := beam.ParDo(s, bySKU, beam.CreateList(s, someOrders(n)[:9]))
		// README step3-pipeline
		priced := async.BatchParDo(s, &priceBatch{URL: srv.URL}, keyed,
			async.WithBatchSize(50), async.WithBatchWait(20*time.Millisecond))
		// END step3-pipeline
		passert.Equals(s, beam.ParDo(s, pricedText, priced), wantPriced(9)...)
		ptest.RunAndValidate(t, p)
	})
	t.Run("step4 enrichment", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		keyed := beam.ParDo(s, bySKU, beam.CreateList(s, someOrders(n)))
		// README step4-pipeline
		priced, failures := async.EnrichWithFailures(s, &priceLookup{URL: srv.URL}, keyed, joinPrice,
			async.WithCache(async.Cache{Size: 10_000, TTL: 5 * time.Minute}))
		// END step4-pipeline
		passert.Equals(s, beam.ParDo(s, pricedText, priced), wantPriced(n)...)
		passert.Count(s, failures, "failures", n/10)
		ptest.RunAndValidate(t, p)
	})
	t.Run("step5 unbounded", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		start := time.Now().Truncate(time.Second)
		ticks := periodic.Impulse(s, start, start.Add(n*50*time.Millisecond), 50*time.Millisecond, false)
		stream := beam.ParDo(s, &orderAt{StartMs: start.UnixMilli()}, ticks)
		// README step5-pipeline
		orders := beam.WindowInto(s, window.NewFixedWindows(time.Minute), stream) // unbounded
		priced, failures := async.ParDoWithFailures(s, &priceFn{URL: srv.URL}, beam.ParDo(s, bySKU, orders),
			async.WithCallbackFrequency(200*time.Millisecond))
		// END step5-pipeline
		texts := beam.WindowInto(s, window.NewGlobalWindows(), beam.ParDo(s, pricedText, priced))
		passert.Equals(s, texts, wantPriced(n)...)
		passert.Count(s, beam.WindowInto(s, window.NewGlobalWindows(), failures), "failures", n/10)
		ptest.RunAndValidate(t, p)
	})
}

// quoted matches a README block's marker and the fenced Go code after it.
var quoted = regexp.MustCompile("(?s)<!-- adopt: ([a-z0-9-]+) -->\n```go\n(.*?)```")

// TestREADMEQuotesTheWalkThrough: every Go block of the README marked
// <!-- adopt: name --> is the code between "// README name" and
// "// END name" in this file, or in pipelines/quickstart (the complete
// program, which its own test runs), so the README runs as written.
func TestREADMEQuotesTheWalkThrough(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The walk-through's steps, and the README's complete program.
	sources := []string{"adopt_test.go", "../../pipelines/quickstart/main.go"}
	texts := map[string]string{}
	for _, name := range sources {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		texts[name] = string(b)
	}
	blocks := quoted.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 6 {
		t.Fatalf("README has %d blocks marked <!-- adopt: name -->; want the walk-through's and the complete program (at least 6)", len(blocks))
	}
	for _, b := range blocks {
		name, got := b[1], b[2]
		found := false
		for _, file := range sources {
			want, ok := region(texts[file], name)
			if !ok {
				continue
			}
			found = true
			if got != want {
				t.Errorf("README block %q differs from %s:\n--- README\n%s--- %s\n%s", name, file, got, file, want)
			}
		}
		if !found {
			t.Errorf("README block %q: no region \"// README %s\" ... \"// END %s\" in %v", name, name, name, sources)
		}
	}
}

// region returns the lines between "// README name" and "// END name",
// without their common indentation.
func region(src, name string) (string, bool) {
	begin, end := "// README "+name+"\n", "// END "+name+"\n"
	i := strings.Index(src, begin)
	if i < 0 {
		return "", false
	}
	rest := src[i+len(begin):]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", false
	}
	lines := strings.SplitAfter(rest[:j], "\n")
	lines[len(lines)-1] = strings.TrimRight(lines[len(lines)-1], "\t ") // the END marker's indentation
	indent := len(lines[0]) - len(strings.TrimLeft(lines[0], "\t"))
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimPrefix(l, strings.Repeat("\t", indent)))
	}
	return strings.TrimRight(b.String(), "\n") + "\n", true
}

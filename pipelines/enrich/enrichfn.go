package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// record is one input line, its number, its priority (see
// --priority_field) and its key.
type record struct {
	Line     string
	LineNo   int
	Priority int
	Key      string
}

// recordPriority is the async transform's priority function.
func recordPriority(r record) int { return r.Priority }

var recordDecoder = beam.NewElementDecoder(reflect.TypeOf(record{}))

// failureJSON writes a failure record of the async transform as one JSON
// line: the original record and its line number, the last error, its kind
// and the attempts. The record is decoded from the failure's value bytes
// with the input's coder.
func failureJSON(f async.Failure) (string, error) {
	var rec any = f.ValueText
	line := 0
	if v, err := recordDecoder.Decode(bytes.NewReader(f.Value)); err == nil {
		r := v.(record)
		line = r.LineNo
		if err := json.Unmarshal([]byte(r.Line), &rec); err != nil {
			rec = r.Line
		}
	}
	out, err := json.Marshal(map[string]any{
		"key": f.KeyText, "line": line, "record": rec, "error": f.Error, "kind": f.Kind, "attempts": f.Attempts,
		"first_attempt": time.UnixMilli(f.FirstAttemptUnixMs).UTC().Format(time.RFC3339Nano),
		"last_attempt":  time.UnixMilli(f.LastAttemptUnixMs).UTC().Format(time.RFC3339Nano),
	})
	return string(out), err
}

// kindBadInput is the failure kind of an input line that cannot be keyed.
const kindBadInput = "bad_input"

// badInputJSON writes an input line that cannot be keyed as one failure
// line: its number, its text and what is wrong with it.
func badInputJSON(b badLine) (string, error) {
	out, err := json.Marshal(map[string]any{"line": b.N, "raw": b.Text, "error": b.Error, "kind": kindBadInput, "attempts": 0})
	return string(out), err
}

// badLine is an input line that cannot be keyed, and why.
type badLine struct {
	numberedLine
	Error string
}

// keyByField keys each JSON Lines record by one of its fields and, when
// PriorityField is set, reads its priority from another. A line that is not
// a JSON object, or lacks the key field, goes to the bad output with its
// number: the job goes on.
type keyByField struct {
	Field         string
	PriorityField string
}

func (f *keyByField) ProcessElement(l numberedLine, emit func(string, record), bad func(badLine)) {
	key, _, prio, err := parseRecord(l.Text, f.Field, f.PriorityField)
	if err != nil {
		bad(badLine{numberedLine: l, Error: err.Error()})
		return
	}
	emit(key, record{Line: l.Text, LineNo: l.N, Priority: prio, Key: key})
}

// serviceClient is what the job's fns share: the service's URL, and an
// HTTP client with the job's timeout, made in Setup.
type serviceClient struct {
	ServiceURL string
	TimeoutMs  int64

	client *http.Client
}

// clientOf is the serviceClient of the service at url, with --http_timeout.
func clientOf(url string) serviceClient {
	return serviceClient{ServiceURL: url, TimeoutMs: httpTimeout.Milliseconds()}
}

func (c *serviceClient) Setup() {
	c.client = &http.Client{Timeout: time.Duration(c.TimeoutMs) * time.Millisecond}
}

// enrichFn is an ordinary synchronous DoFn: one blocking HTTP call per
// record. The async transform runs it concurrently.
type enrichFn struct{ serviceClient }

// ProcessElement calls the service and emits the record with the enrichment
// merged in. Errors the service could recover from (5xx, a broken connection,
// a timeout) are returned for the async transform to retry; a record the
// service rejects (4xx) or cannot be parsed is a permanent failure.
func (f *enrichFn) ProcessElement(ctx context.Context, key string, r record, emit func(string)) error {
	line := r.Line
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		return async.Permanent(fmt.Errorf("record of key %s is not JSON: %w", key, err))
	}
	extra, err := f.call(ctx, line)
	if err != nil {
		return err
	}
	for k, v := range extra {
		rec[k] = v
	}
	out, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	emit(string(out))
	return nil
}

func (f *enrichFn) call(ctx context.Context, line string) (map[string]any, error) {
	// The attempt's number, so that the loopback service can count retries.
	body, err := postJSON(ctx, f.client, f.ServiceURL, "enrichment service", []byte(line), async.Attempt(ctx), 1<<20)
	if err != nil {
		return nil, err
	}
	var extra map[string]any
	if err := json.Unmarshal(body, &extra); err != nil {
		return nil, async.Permanent(fmt.Errorf("enrichment service answered with invalid JSON: %w", err))
	}
	return extra, nil
}

// enrichBatchFn is enrichFn for the service's batch endpoint (--batch_size):
// one call for many records. A record that is not JSON, or that the service
// answers with an error, fails on its own, for good; a failed call fails
// them all, to be retried.
type enrichBatchFn struct{ serviceClient }

func (f *enrichBatchFn) ProcessBatch(ctx context.Context, keys []string, recs []record, emit func(int, string)) ([]error, error) {
	errs := make([]error, len(recs))
	parsed := make([]map[string]any, len(recs))
	var body []json.RawMessage
	var sent []int // indexes of the records in the request
	for i, r := range recs {
		if err := json.Unmarshal([]byte(r.Line), &parsed[i]); err != nil || parsed[i] == nil {
			errs[i] = async.Permanent(fmt.Errorf("record of key %s is not a JSON object", keys[i]))
			continue
		}
		body = append(body, json.RawMessage(r.Line))
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return errs, nil
	}
	answers, err := f.call(ctx, body)
	if err != nil {
		return nil, err
	}
	if len(answers) != len(sent) {
		return nil, fmt.Errorf("enrichment service: %d answers for %d records", len(answers), len(sent))
	}
	for j, i := range sent {
		if msg, ok := answers[j]["error"].(string); ok {
			errs[i] = async.Permanent(fmt.Errorf("enrichment service: %s", msg))
			continue
		}
		for k, v := range answers[j] {
			parsed[i][k] = v
		}
		out, err := json.Marshal(parsed[i])
		if err != nil {
			errs[i] = err
			continue
		}
		emit(i, string(out))
	}
	return errs, nil
}

func (f *enrichBatchFn) call(ctx context.Context, recs []json.RawMessage) ([]map[string]any, error) {
	payload, err := json.Marshal(recs)
	if err != nil {
		return nil, err
	}
	answer, err := postJSON(ctx, f.client, f.ServiceURL, "enrichment service", payload, 0, 64<<20)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	if err := json.Unmarshal(answer, &out); err != nil {
		return nil, fmt.Errorf("enrichment service answered a batch with invalid JSON: %w", err)
	}
	return out, nil
}

// postJSON posts body to url and returns the answer's body (at most limit
// bytes). attempt, if > 0, goes in an X-Attempt header (the loopback
// service counts retries by it). 429 and 503 are overload (retried after
// Retry-After, and they slow the pool down), other 4xx permanent, other
// errors retried (async.CheckResponse); what names the service in them.
func postJSON(ctx context.Context, client *http.Client, url, what string, body []byte, attempt int, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if attempt > 0 {
		req.Header.Set("X-Attempt", strconv.Itoa(attempt))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := async.CheckResponse(resp); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err) // with the start of the service's answer
	}
	return io.ReadAll(io.LimitReader(resp.Body, limit))
}

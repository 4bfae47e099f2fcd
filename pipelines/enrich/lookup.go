package main

// The job's lookup form (--lookup_by_customer, and --cache, which implies
// it): each record's customer profile, an answer that depends on the
// customer alone, is looked up and merged into the record by
// async.Enrich. With --cache it makes one lookup per customer, cached by
// customer; without, it is the uncached baseline the cache is measured
// against (async.WithoutCache: one lookup per record). A record whose
// lookup failed for good is in the failure output only, so that every
// record is in exactly one of the two files.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// fetchProfile asks the profile service for a customer's profile fields.
func fetchProfile(ctx context.Context, c *serviceClient, customer string) (map[string]any, error) {
	body, _ := json.Marshal(map[string]string{"customer_id": customer})
	answer, err := postJSON(ctx, c.client, c.ServiceURL, "profile service", body, 0, 1<<20)
	if err != nil {
		return nil, err
	}
	var prof map[string]any
	if err := json.Unmarshal(answer, &prof); err != nil {
		return nil, async.Permanent(fmt.Errorf("profile service answered with invalid JSON: %w", err))
	}
	return prof, nil
}

// profileLookup is async.Enrich's lookup: a customer's profile fields, as
// JSON.
type profileLookup struct{ serviceClient }

func (f *profileLookup) Lookup(ctx context.Context, customer string) (string, error) {
	prof, err := fetchProfile(ctx, &f.serviceClient, customer)
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(prof)
	return string(out), err
}

// mergeProfile is async.Enrich's join: the record with its customer's
// profile fields (JSON) merged in.
func mergeProfile(r record, fields string) (string, error) {
	var prof map[string]any
	if err := json.Unmarshal([]byte(fields), &prof); err != nil {
		return "", err
	}
	return mergeRecord(r, prof)
}

// mergeRecord is the record with the profile's fields merged in.
func mergeRecord(r record, fields map[string]any) (string, error) {
	var rec map[string]any
	if err := json.Unmarshal([]byte(r.Line), &rec); err != nil {
		return "", fmt.Errorf("record on line %d: %w", r.LineNo, err)
	}
	for k, v := range fields {
		rec[k] = v
	}
	out, err := json.Marshal(rec)
	return string(out), err
}

// profileBatchLookup is async.BatchEnrich's lookup (--batch_size): the
// profile fields of many customers in one call, as JSON, one per customer.
type profileBatchLookup struct{ serviceClient }

func (f *profileBatchLookup) LookupBatch(ctx context.Context, customers []string) ([]string, error) {
	body, err := json.Marshal(customers)
	if err != nil {
		return nil, async.Permanent(err)
	}
	answer, err := postJSON(ctx, f.client, f.ServiceURL, "profile service", body, 0, 64<<20)
	if err != nil {
		return nil, err
	}
	var profiles []json.RawMessage
	if err := json.Unmarshal(answer, &profiles); err != nil {
		return nil, fmt.Errorf("profile service answered a batch with invalid JSON: %w", err)
	}
	out := make([]string, len(profiles))
	for i, p := range profiles {
		out[i] = string(p)
	}
	return out, nil // a list of another length fails the request
}

// lookupPipeline is the lookup form's middle: it returns the enriched
// records and the failure records.
func lookupPipeline(s beam.Scope, keyed beam.PCollection, url string, cached, batched bool, opts []async.Option) (enriched, failures beam.PCollection, err error) {
	if !cached {
		opts = append(opts, async.WithoutCache())
	}
	if batched {
		return async.TryBatchEnrichWithFailures(s, &profileBatchLookup{clientOf(url)}, keyed, mergeProfile, opts...)
	}
	return async.TryEnrichWithFailures(s, &profileLookup{clientOf(url)}, keyed, mergeProfile, opts...)
}

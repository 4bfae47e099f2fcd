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

// lookupPipeline is the lookup form's middle: it returns the enriched
// records and the failure records.
func lookupPipeline(s beam.Scope, keyed beam.PCollection, url string, cached bool, opts []async.Option) (enriched, failures beam.PCollection, err error) {
	if !cached {
		opts = append(opts, async.WithoutCache())
	}
	return async.TryEnrichWithFailures(s, &profileLookup{clientOf(url)}, keyed, mergeProfile, opts...)
}

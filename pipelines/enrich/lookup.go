package main

// The job's lookup form (--lookup_by_customer, and --cache, which implies
// it): each record's customer profile, an answer that depends on the
// customer alone, is looked up and merged into the record. With --cache it
// is async.Enrich: one lookup per customer, cached by customer, and the
// join per record. Without, it is the uncached baseline the cache is
// measured against: async.ParDo looks up the profile once per record, and
// a join by customer (CoGroupByKey) merges each record with its customer's
// profile. Either way a record whose lookup failed for good is in the
// failure output only, so that every record is in exactly one of the two
// files.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// profileFn looks up a record's customer profile: one call per record (or
// none, from the cache), whose output is the profile with the customer's
// ID, the same for every record of the customer.
type profileFn struct{ serviceClient }

func (f *profileFn) ProcessElement(ctx context.Context, customer string, _ record, emit func(string)) error {
	prof, err := fetchProfile(ctx, &f.serviceClient, customer)
	if err != nil {
		return err
	}
	out, err := json.Marshal(profile{Customer: customer, Fields: prof})
	if err != nil {
		return err
	}
	emit(string(out))
	return nil
}

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

// profile is profileFn's output.
type profile struct {
	Customer string         `json:"customer"`
	Fields   map[string]any `json:"fields"`
}

// profileByCustomer keys a profile by its customer.
func profileByCustomer(p string) (string, string, error) {
	var prof profile
	if err := json.Unmarshal([]byte(p), &prof); err != nil {
		return "", "", fmt.Errorf("a profile that is not JSON: %w", err)
	}
	return prof.Customer, p, nil
}

// failedLineByCustomer keys a failed lookup's line number by its customer.
func failedLineByCustomer(f async.Failure) (string, int, error) {
	v, err := recordDecoder.Decode(bytes.NewReader(f.Value))
	if err != nil {
		return "", 0, fmt.Errorf("decoding a failed record: %w", err)
	}
	r := v.(record)
	return r.Key, r.LineNo, nil
}

// mergeProfiles merges each record of a customer with the customer's
// profile, but for the records whose lookup failed for good. Every record
// whose lookup succeeded has a profile: one missing is a bug, and fails.
func mergeProfiles(customer string, records func(*record) bool, profiles func(*string) bool, failed func(*int) bool, emit func(string)) error {
	var p string
	for profiles(&p) {
		break // all of a customer's profiles are alike
	}
	gone := map[int]bool{}
	var line int
	for failed(&line) {
		gone[line] = true
	}
	var prof profile
	if p != "" {
		if err := json.Unmarshal([]byte(p), &prof); err != nil {
			return err
		}
	}
	var r record
	for records(&r) {
		if gone[r.LineNo] {
			continue
		}
		if p == "" {
			return fmt.Errorf("customer %s: record on line %d has neither a profile nor a failure", customer, r.LineNo)
		}
		out, err := mergeRecord(r, prof.Fields)
		if err != nil {
			return err
		}
		emit(out)
	}
	return nil
}

// lookupPipeline is the lookup form's middle: profiles by customer, then
// the join; it returns the enriched records and the failure records. With
// cached, async.Enrich does both.
func lookupPipeline(s beam.Scope, keyed beam.PCollection, url string, cached bool, opts []async.Option) (enriched, failures beam.PCollection, err error) {
	if cached {
		return async.TryEnrichWithFailures(s, &profileLookup{clientOf(url)}, keyed, mergeProfile, opts...)
	}
	profiles, failures, err := async.TryParDoWithFailures(s, &profileFn{clientOf(url)}, keyed, opts...)
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	byCustomer := beam.ParDo(s, profileByCustomer, profiles)
	failedLines := beam.ParDo(s, failedLineByCustomer, failures)
	joined := beam.CoGroupByKey(s, keyed, byCustomer, failedLines)
	return beam.ParDo(s, mergeProfiles, joined), failures, nil
}

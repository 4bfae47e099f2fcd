package main

// The job's end: every input line accounted for once, across the outputs.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"
)

// summarize checks both outputs against the input and prints the summary:
// an enriched record is found by its id, a failure by its record's id, or
// by its line number when the line could not be read as a record.
func summarize(inIDs []string, out files, wall time.Duration, svc *service, calls callFigures) error {
	seen := map[string]int{}
	enriched, err := countRecords(out.enriched, func(rec map[string]any) { seen["id:"+fmt.Sprint(rec["id"])]++ })
	if err != nil {
		return err
	}
	kinds := map[string]int{}
	failed, err := countRecords(out.failures, func(rec map[string]any) {
		kinds[fmt.Sprint(rec["kind"])]++
		if r, ok := rec["record"].(map[string]any); ok {
			seen["id:"+fmt.Sprint(r["id"])]++
		} else {
			seen[fmt.Sprintf("line:%v", rec["line"])]++
		}
	})
	if err != nil {
		return err
	}
	missing, dups := unaccounted(inIDs, seen)
	line := fmt.Sprintf("records: in=%d out=%d failed=%d wall=%s throughput=%.0f/s calls=%d overloaded=%d concurrency=%d",
		len(inIDs), enriched, failed, wall.Round(time.Millisecond), float64(len(inIDs))/wall.Seconds(), calls.calls, calls.overloaded, calls.limit)
	if *cacheFlag != "" {
		line += fmt.Sprintf(" hit_rate=%.3f", float64(calls.cacheHits)/float64(max(calls.cacheHits+calls.cacheMisses, 1)))
	}
	if calls.requests > 0 {
		line += fmt.Sprintf(" requests=%d per_request=%.1f", calls.requests, float64(calls.requestItems)/float64(calls.requests))
	}
	if svc != nil {
		// The limit: every call made by *concurrency at once, back to back
		// (full batches with --batch_size).
		limit := time.Duration(len(inIDs)) * svc.latency / time.Duration(*concurrency)
		if *batchSize > 0 {
			batches := (len(inIDs) + *batchSize - 1) / *batchSize
			limit = time.Duration(batches) * (svc.latency + time.Duration(*batchSize)*svc.itemCost) / time.Duration(*concurrency)
		}
		line += fmt.Sprintf(" parallelism=%d limit=%s (%.2f of it)", svc.peak.Load(), limit.Round(time.Millisecond), limit.Seconds()/wall.Seconds())
	}
	line += failureKinds(kinds)
	fmt.Printf("output: %s\nfailures: %s\n%s\n", out.enriched, out.failures, line)
	if missing > 0 || dups > 0 {
		return fmt.Errorf("%d input records missing from both outputs and %d duplicated", missing, dups)
	}
	return nil
}

// unaccounted counts the input IDs seen in neither output (missing) and
// those seen more than once (dups). It marks each input ID in seen as
// counted, so that a repeated input ID is counted once.
func unaccounted(inIDs []string, seen map[string]int) (missing, dups int) {
	for _, id := range inIDs {
		switch seen[id] {
		case 0:
			missing++
		case 1:
		default:
			dups++
		}
		seen[id] = -1 // count each input ID once
	}
	return missing, dups
}

// failureKinds is the summary line's failure counts by kind, in name
// order (" failures: kind=n ..."), or "" when there are none.
func failureKinds(kinds map[string]int) string {
	if len(kinds) == 0 {
		return ""
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	line := " failures:"
	for _, k := range names {
		line += fmt.Sprintf(" %s=%d", k, kinds[k])
	}
	return line
}

// countRecords reads a JSON Lines file (a missing file holds none).
func countRecords(path string, each func(map[string]any)) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	n := 0
	err = eachLine(f, func(_ int, line string) error {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return fmt.Errorf("%s: a line is not JSON: %w", path, err)
		}
		each(rec)
		n++
		return nil
	})
	return n, err
}

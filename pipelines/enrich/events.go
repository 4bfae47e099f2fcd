package main

// The events check (--events): the events counted by type, and with
// --ordered each key's commits checked against its input order.

import (
	"fmt"
	"slices"

	"github.com/asyncbeam/asyncbeam/transforms/async"
)

// summarizeEvents counts the events the listener wrote, by type, and with
// --ordered checks that each key's records were committed in the order they
// were accepted.
func summarizeEvents(path string) error {
	evs, err := async.ReadEvents(path)
	if err != nil {
		return fmt.Errorf("reading the events: %w", err)
	}
	count := map[async.EventType]int{}
	for _, e := range evs {
		count[e.Type]++
	}
	line := fmt.Sprintf("events: %s:", path)
	for _, t := range []async.EventType{async.EventAccepted, async.EventStarted, async.EventSucceeded, async.EventRetrying,
		async.EventFailed, async.EventCommitted, async.EventRescheduled, async.EventCancelled, async.EventDeduplicated} {
		line += fmt.Sprintf(" %s=%d", t, count[t])
	}
	fmt.Println(line)
	if !*ordered {
		return nil
	}
	keys, err := checkOrder(evs)
	if err != nil {
		return err
	}
	fmt.Printf("order: each of %d keys committed its records in input order\n", keys)
	return nil
}

// checkOrder compares, per key, the order of the committed events with the
// order of the accepted ones (records that failed for good left out).
func checkOrder(evs []async.Event) (keys int, err error) {
	accepted, committed := map[string][]string{}, map[string][]string{}
	seen, done := map[string]bool{}, map[string]bool{}
	for _, e := range evs {
		id := e.KeyText + "/" + e.ElementID
		switch e.Type {
		case async.EventAccepted:
			if !seen[id] {
				seen[id] = true
				accepted[e.KeyText] = append(accepted[e.KeyText], e.ElementID)
			}
		case async.EventCommitted:
			done[id] = true
			committed[e.KeyText] = append(committed[e.KeyText], e.ElementID)
		}
	}
	for key, ids := range accepted {
		var want []string
		for _, id := range ids {
			if done[key+"/"+id] {
				want = append(want, id)
			}
		}
		if got := committed[key]; !slices.Equal(got, want) {
			return 0, fmt.Errorf("key %s: records committed in order %v, accepted in order %v", key, got, want)
		}
	}
	return len(accepted), nil
}

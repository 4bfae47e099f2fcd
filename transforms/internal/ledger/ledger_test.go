package ledger

import (
	"slices"
	"testing"
)

// TestLedger: steps of bundles publishing one source's counts, and what
// each Take hands out.
func TestLedger(t *testing.T) {
	type step struct {
		op     string // take, confirm, release
		ticket Ticket
		total  []int64 // take: the source's counts now
		want   []int64 // take: the delta
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"one bundle, confirmed: nothing twice", []step{
			{"take", 1, []int64{3, 1}, []int64{3, 1}},
			{"take", 1, []int64{5, 1}, []int64{2, 0}},
			{"confirm", 1, nil, nil},
			{"take", 2, []int64{5, 1}, []int64{0, 0}},
		}},
		{"a released bundle's counts are published again", []step{
			{"take", 1, []int64{4}, []int64{4}},
			{"release", 1, nil, nil},
			{"take", 2, []int64{6}, []int64{6}},
			{"confirm", 2, nil, nil},
			{"take", 3, []int64{6}, []int64{0}},
		}},
		{"two open bundles share out the counts", []step{
			{"take", 1, []int64{4}, []int64{4}},
			{"take", 2, []int64{7}, []int64{3}},
			{"release", 1, nil, nil},
			{"take", 3, []int64{7}, []int64{4}},
			{"confirm", 2, nil, nil},
			{"confirm", 3, nil, nil},
			{"take", 4, []int64{7}, []int64{0}},
		}},
		{"the zero ticket confirms at once", []step{
			{"take", 0, []int64{2}, []int64{2}},
			{"take", 0, []int64{2}, []int64{0}},
			{"take", 1, []int64{3}, []int64{1}},
		}},
		{"a count that went down gives no negative delta", []step{
			{"take", 0, []int64{5}, []int64{5}},
			{"take", 1, []int64{3}, []int64{0}},
		}},
		{"confirm and release of unknown tickets do nothing", []step{
			{"confirm", 9, nil, nil},
			{"release", 8, nil, nil},
			{"take", 1, []int64{1}, []int64{1}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := New(len(tc.steps[len(tc.steps)-1].total))
			for i, s := range tc.steps {
				switch s.op {
				case "take":
					got, any := l.Take(s.ticket, s.total)
					if !slices.Equal(got, s.want) || any != slices.ContainsFunc(s.want, func(v int64) bool { return v != 0 }) {
						t.Fatalf("step %d: Take(%d, %v) = %v, %v; want %v", i, s.ticket, s.total, got, any, s.want)
					}
				case "confirm":
					l.Confirm(s.ticket)
				case "release":
					l.Release(s.ticket)
				}
			}
		})
	}
}

// TestTicketsDiffer: tickets are unique and never zero.
func TestTicketsDiffer(t *testing.T) {
	a, b := NewTicket(), NewTicket()
	if a == 0 || b == 0 || a == b {
		t.Errorf("tickets %d and %d; want two different non-zero tickets", a, b)
	}
}

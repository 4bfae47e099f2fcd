package drain

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// TestDrainFiring: the drain timer of every hold fires after any event time
// a watermark reaches before the end of input (the year 3000 here), no
// earlier than its hold (Flink holds nothing for a later hold), no later
// than the global window's end, and at another instant for another hold
// less than drainSpan away (see drainFiring), also across the band's lower
// edge, where the firing turns from congruent to the hold itself.
func TestDrainFiring(t *testing.T) {
	year3000 := mtime.FromTime(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	end := mtime.EndOfGlobalWindowTime
	band := end - mtime.Time(drainSpan)
	check := func(hold mtime.Time) mtime.Time {
		f := drainFiring(hold)
		if f <= year3000 || f > end {
			t.Errorf("drainFiring(%d) = %d; want in (%d, %d]", hold, f, year3000, end)
		}
		if f < hold {
			t.Errorf("drainFiring(%d) = %d; want at or after the hold", hold, f)
		}
		return f
	}
	for _, holds := range [][]mtime.Time{
		{mtime.MinTimestamp, -1, 0, 1, 2, mtime.Now(), mtime.Now() + 1, year3000},
		{band - 2, band - 1, band, band + 1, band + 2},
		{band, end - 2, end - 1, end},
		// k ms apart, where k is the band's offset from a multiple of
		// drainSpan: a firing congruent to the hold above the edge would
		// give both one instant.
		{end - 2*mtime.Time(int64(end)%drainSpan), end - mtime.Time(int64(end)%drainSpan)},
	} { // each list within drainSpan
		seen := map[mtime.Time]mtime.Time{}
		for _, hold := range holds {
			f := check(hold)
			if other, ok := seen[f]; ok {
				t.Errorf("holds %d and %d fire at the same instant %d", other, hold, f)
			}
			seen[f] = hold
		}
	}
	// Pairs less than drainSpan apart, around the band's lower edge and
	// across the whole range of event times.
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		var a mtime.Time
		switch i % 3 {
		case 0:
			a = band - mtime.Time(drainSpan) + mtime.Time(r.Int64N(2*drainSpan))
		case 1:
			a = mtime.MinTimestamp + mtime.Time(r.Int64N(int64(end-mtime.MinTimestamp)))
		default:
			a = band - mtime.Time(r.Int64N(1000)) // the edge, by ms
		}
		b := a + 1 + mtime.Time(r.Int64N(drainSpan-1))
		if i%3 == 2 {
			b = a + 1 + mtime.Time(r.Int64N(2000))
		}
		if b > end {
			continue
		}
		if fa, fb := check(a), check(b); fa == fb {
			t.Fatalf("holds %d and %d (%d apart) fire at the same instant %d", a, b, b-a, fa)
		}
	}
}

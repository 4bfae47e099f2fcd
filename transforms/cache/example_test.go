package cache_test

import (
	"fmt"
	"time"

	"github.com/asyncbeam/asyncbeam/transforms/cache"
)

// A worker's cache in front of a lookup, with copies of a key in flight
// joined to one call.
func Example() {
	local, err := cache.NewLocal(10_000, 10*time.Minute, nil)
	if err != nil {
		panic(err)
	}
	var flight cache.Flight
	calls := 0
	lookup := func(customer string) []byte {
		k := cache.KeyOf([]byte(customer))
		if v, ok := local.Get(k); ok {
			return v
		}
		c, leader := flight.Join(k)
		if !leader {
			v, _ := c.Result()
			return v
		}
		calls++
		v := []byte("profile of " + customer) // the slow call
		local.Add(k, v, 0)
		flight.Finish(k, c, v, nil)
		return v
	}
	for _, c := range []string{"ada", "bob", "ada", "ada"} {
		fmt.Printf("%s\n", lookup(c))
	}
	st := local.Stats()
	fmt.Println("calls:", calls, "hits:", st.Hits, "misses:", st.Misses)
	// Output:
	// profile of ada
	// profile of bob
	// profile of ada
	// profile of ada
	// calls: 2 hits: 2 misses: 2
}

package main

import "testing"

// TestQuickstart runs the README's program as written, on embedded prism:
// every order priced once or a failure record once.
func TestQuickstart(t *testing.T) {
	*orderCount = 20 // ten SKUs, one of them unknown
	pricedN.Store(0)
	failedN.Store(0)
	main()
	if got, want := pricedN.Load(), int64(18); got != want {
		t.Errorf("priced %d orders; want %d", got, want)
	}
	if got, want := failedN.Load(), int64(2); got != want {
		t.Errorf("%d failure records; want %d", got, want)
	}
}

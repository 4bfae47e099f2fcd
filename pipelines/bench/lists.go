package main

// Reading the flags' comma lists.

import (
	"strconv"
	"strings"
	"time"
)

// keyShapes reads the batch key shapes: numbers, or "n" for one key per
// element.
func keyShapes(flagValue string, n int) []int {
	var out []int
	for _, k := range list(flagValue) {
		if k == "n" {
			out = append(out, n)
			continue
		}
		if v, err := strconv.Atoi(k); err == nil && v > 0 {
			out = append(out, v)
		}
	}
	return out
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func intList(s string) []int {
	var out []int
	for _, f := range list(s) {
		if v, err := strconv.Atoi(f); err == nil {
			out = append(out, v)
		}
	}
	return out
}

func floatList(s string) []float64 {
	var out []float64
	for _, f := range list(s) {
		if v, err := strconv.ParseFloat(f, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

func durationList(s string) []time.Duration {
	var out []time.Duration
	for _, f := range list(s) {
		if v, err := time.ParseDuration(f); err == nil {
			out = append(out, v)
		}
	}
	return out
}

package main

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// checkOnce checks that every element of the run was output exactly once in
// each of its windows (one, or SIZE/PERIOD for sliding windows), and says
// what went wrong otherwise, for example "lost 3 (e.g. 17, 204, 9001),
// duplicated 1 (e.g. 55)": a contender that loses or repeats an element
// fails its run.
func checkOnce(s spec, outs []output) string {
	type seen struct {
		index    int32
		winStart int64
		winLen   int32
	}
	all := make([]seen, len(outs))
	for i, o := range outs {
		all[i] = seen{o.index, o.winStart, o.winLenMs}
	}
	slices.SortFunc(all, func(a, b seen) int {
		return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.winStart, b.winStart), cmp.Compare(a.winLen, b.winLen))
	})
	n, want := s.elements(), s.window().perElement()
	var lost, duplicated, extra, unknown []int
	j := 0
	for ; j < len(all) && all[j].index < 0; j++ { // made up: no element has one
		unknown = append(unknown, int(all[j].index))
	}
	for i := 0; i < n; i++ {
		windows, dup := 0, false
		for ; j < len(all) && int(all[j].index) == i; j++ {
			if j > 0 && all[j] == all[j-1] {
				dup = true
				continue
			}
			windows++
		}
		switch {
		case dup:
			duplicated = append(duplicated, i)
		case windows < want:
			lost = append(lost, i)
		case windows > want:
			extra = append(extra, i)
		}
		if dup && windows < want {
			lost = append(lost, i)
		}
	}
	for ; j < len(all); j++ { // beyond the last element: made up too
		if j == 0 || all[j].index != all[j-1].index {
			unknown = append(unknown, int(all[j].index))
		}
	}
	var parts []string
	for _, p := range []struct {
		what string
		is   []int
	}{{"lost", lost}, {"duplicated", duplicated}, {"in more windows than " + strconv.Itoa(want), extra}, {"unknown", unknown}} {
		if len(p.is) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (e.g. %s)", p.what, len(p.is), examples(p.is)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("exactly-once check: of %d elements × %d windows, %s", n, want, strings.Join(parts, ", "))
}

// examples names up to three of is.
func examples(is []int) string {
	var out []string
	for _, i := range is[:min(3, len(is))] {
		out = append(out, strconv.Itoa(i))
	}
	return strings.Join(out, ", ")
}

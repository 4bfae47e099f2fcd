package async

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/asyncbeam/asyncbeam/transforms/async/internal/terms"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/worker"
	"github.com/asyncbeam/asyncbeam/transforms/async/internal/wrapped"
)

type answerV1 struct {
	Price int
	Note  string
}

type answerV2 struct { // answerV1 with a field added
	Price int
	Note  string
	Tax   int
}

type answerRenamed struct { // answerV1 with a field renamed
	Price int
	Text  string
}

type answerTagged struct {
	Price int `json:"p"`
	Note  string
}

type tree struct {
	Value    int
	Children []*tree
}

// describe is describeType of t.
func describe(t reflect.Type) string {
	var b strings.Builder
	worker.DescribeType(&b, t, map[reflect.Type]bool{})
	return b.String()
}

// TestDescribeTypeTellsCodersApart: types whose coders differ have
// different descriptions, the same type always the same one, and a
// recursive type ends.
func TestDescribeTypeTellsCodersApart(t *testing.T) {
	differ := []struct {
		name string
		a, b reflect.Type
	}{
		{"a field added", reflect.TypeOf(answerV1{}), reflect.TypeOf(answerV2{})},
		{"a field renamed", reflect.TypeOf(answerV1{}), reflect.TypeOf(answerRenamed{})},
		{"a tag changed", reflect.TypeOf(answerV1{}), reflect.TypeOf(answerTagged{})},
		{"string and bytes", reflect.TypeOf(""), reflect.TypeOf([]byte(nil))},
		{"int32 and int64", reflect.TypeOf(int32(0)), reflect.TypeOf(int64(0))},
		{"slice of V1 and of V2", reflect.TypeOf([]answerV1{}), reflect.TypeOf([]answerV2{})},
		{"map values", reflect.TypeOf(map[string]int{}), reflect.TypeOf(map[string]int64{})},
		{"arrays of two lengths", reflect.TypeOf([2]int{}), reflect.TypeOf([3]int{})},
		{"a repeated unnamed field type changed", reflect.TypeOf(struct {
			A []int
			B []string
			C []int
		}{}), reflect.TypeOf(struct {
			A []int
			B []string
			C []string
		}{})},
	}
	for _, tc := range differ {
		if da, db := describe(tc.a), describe(tc.b); da == db {
			t.Errorf("%s: %v and %v are both described %q; want different descriptions", tc.name, tc.a, tc.b, da)
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(answerV1{}), reflect.TypeOf(&tree{}), reflect.TypeOf(kvOutput{})} {
		if a, b := describe(typ), describe(typ); a != b || a == "" {
			t.Errorf("%v described %q, then %q; want one non-empty description", typ, a, b)
		}
	}
	if got := describe(reflect.TypeOf(tree{})); !strings.Contains(got, "Children") {
		t.Errorf("tree described %q; want its fields", got)
	}
}

// TestCachedShapeCoversPairs: a fn whose output pairs change type gets
// another cache shape though its outputs are kvOutput either way.
func TestCachedShapeCoversPairs(t *testing.T) {
	shape := func(k, v reflect.Type) string {
		f := &worker.Core{Config: terms.Config{OutputType: &beam.EncodedType{T: reflect.TypeOf(kvOutput{})}}}
		f.User.Pairs = &wrapped.PairTypes{Key: beam.EncodedType{T: k}, Value: beam.EncodedType{T: v}}
		return string(f.CachedShape())
	}
	a := shape(reflect.TypeOf(""), reflect.TypeOf(answerV1{}))
	b := shape(reflect.TypeOf(""), reflect.TypeOf(answerV2{}))
	c := shape(reflect.TypeOf(int64(0)), reflect.TypeOf(answerV1{}))
	if a == b || a == c {
		t.Errorf("shapes of pairs (string, V1) %q, (string, V2) %q, (int64, V1) %q; want all different", a, b, c)
	}
}

// TestPublicTypesKeepTheFrontsName: the public data types, declared in
// internal/terms, are named async.X in messages and in cache shapes, as
// they were before they moved there (a cache entry written then still hits).
func TestPublicTypesKeepTheFrontsName(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeOf(Failure{}), "async.Failure"},
		{reflect.TypeOf([]*FailureError{}), "[]*async.FailureError"},
		{reflect.TypeOf(map[string]Event{}), "map[string]async.Event"},
	} {
		if got := wrapped.TypeName(c.t); got != c.want {
			t.Errorf("TypeName(%v) = %q, want %q", c.t, got, c.want)
		}
	}
	var b strings.Builder
	worker.DescribeType(&b, reflect.TypeOf(Failure{}), map[reflect.Type]bool{})
	if want := "github.com/asyncbeam/asyncbeam/transforms/async.Failure"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("describeType(Failure) = %q, want it to begin with %q", b.String(), want)
	}
}

package fuzz

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestShrinkToMinimal: a generator of lists of small numbers and the
// property "some element is at least 50 and the list has three or more
// elements" shrink, from random failing draws, to the minimal input the
// generator can make: three elements, [0, 0, 50] (the zeros first,
// shortlex), never an input the generator could not produce.
func TestShrinkToMinimal(t *testing.T) {
	gen := func(s *Source) []int {
		var xs []int
		s.List(90, 20, func(int) { xs = append(xs, s.Intn(100)) })
		return xs
	}
	bad := func(xs []int) bool { return len(xs) >= 3 && slices.Max(xs) >= 50 }
	for seed := range uint64(20) {
		src := newRandomSource(rand.New(rand.NewPCG(seed, 1)))
		if !bad(gen(src)) {
			continue
		}
		test := func(c Choices) (Choices, []span, bool) {
			s := newReplaySource(c)
			xs := gen(s)
			return s.out, s.spans, bad(xs)
		}
		best, _ := shrink(test, src.out, src.spans, 10*time.Second, 10000)
		got := gen(newReplaySource(best))
		if !slices.Equal(got, []int{0, 0, 50}) {
			t.Errorf("seed %d: shrunk to %v (choices %v), want [0 0 50]", seed, got, best)
		}
	}
}

// TestListKeepsLaterChoicesInPlace: a full list reads the choice that
// would have ended it, so dropping one element's span leaves the choices
// drawn after the list where they were.
func TestListKeepsLaterChoicesInPlace(t *testing.T) {
	gen := func(s *Source) ([]int, int) {
		var xs []int
		s.List(99, 2, func(int) { xs = append(xs, s.Intn(10)) })
		return xs, s.Intn(10)
	}
	src := newReplaySource(Choices{99, 3, 99, 4, 0, 7})
	xs, after := gen(src)
	if !slices.Equal(xs, []int{3, 4}) || after != 7 {
		t.Fatalf("drew %v then %d", xs, after)
	}
	sp := src.spans[0]
	xs, after = gen(newReplaySource(without(src.out, sp.start, sp.end)))
	if !slices.Equal(xs, []int{4}) || after != 7 {
		t.Errorf("after dropping the first element: %v then %d, want [4] then 7", xs, after)
	}
}

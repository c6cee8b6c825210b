package fuzz

import (
	"slices"
	"time"
)

// trial replays a choice sequence; it returns the choices the generator
// actually read (a prefix of c, or c padded with the zeros it read past
// the end), the spans of its list elements, and whether the input it made
// is still interesting (differs in the same way).
type trial func(c Choices) (used Choices, spans []span, ok bool)

// shrinker reduces an interesting choice sequence, Hypothesis-style: it
// tries edits of the sequence (never of the input), keeps an edit when the
// replayed input is still interesting and its sequence is smaller in
// shortlex order, and stops at a fixpoint or when the budget is spent.
type shrinker struct {
	test     trial
	best     Choices
	spans    []span
	deadline time.Time
	maxTests int
	tests    int
}

// shrink returns the smallest interesting sequence found from start.
func shrink(test trial, start Choices, spans []span, budget time.Duration, maxTests int) (Choices, int) {
	s := &shrinker{test: test, best: start, spans: spans, deadline: time.Now().Add(budget), maxTests: maxTests}
	for s.live() {
		before := s.best
		s.dropSpans()   // structural: drop whole nodes, steps, fragments, pages
		s.dropChunks()  // drop runs of choices
		s.zeroChunks()  // simplest choices in a run
		s.lowerEach()   // each choice as small as it goes
		s.shrinkSpans() // an element replaced by one of its own sub-elements
		s.swapSpans()   // simpler elements first
		if !shortlexLess(s.best, before) {
			break
		}
	}
	return s.best, s.tests
}

func (s *shrinker) live() bool {
	return s.tests < s.maxTests && time.Now().Before(s.deadline)
}

// try tests candidate c and adopts it when it is interesting and smaller.
func (s *shrinker) try(c Choices) bool {
	if !s.live() || !shortlexLess(c, s.best) {
		return false
	}
	s.tests++
	used, spans, ok := s.test(c)
	if !ok || !shortlexLess(used, s.best) {
		return false
	}
	s.best, s.spans = used, spans
	return true
}

func without(c Choices, i, j int) Choices {
	out := make(Choices, 0, len(c)-(j-i))
	out = append(out, c[:i]...)
	return append(out, c[j:]...)
}

// dropSpans deletes whole list elements, largest first.
func (s *shrinker) dropSpans() {
	for changed := true; changed && s.live(); {
		changed = false
		spans := slices.Clone(s.spans)
		slices.SortStableFunc(spans, func(a, b span) int { return (b.end - b.start) - (a.end - a.start) })
		for _, sp := range spans {
			if sp.end <= len(s.best) && s.try(without(s.best, sp.start, sp.end)) {
				changed = true
				break
			}
		}
	}
}

// shrinkSpans replaces an element by one nested in it (a node's text by
// one of its fragments, a step by its command), where spans nest.
func (s *shrinker) shrinkSpans() {
	for changed := true; changed && s.live(); {
		changed = false
		for _, outer := range s.spans {
			for _, inner := range s.spans {
				if inner.start <= outer.start || inner.end > outer.end || inner == outer || outer.end > len(s.best) {
					continue
				}
				c := append(slices.Clone(s.best[:outer.start]), s.best[inner.start:inner.end]...)
				c = append(c, s.best[outer.end:]...)
				if s.try(c) {
					changed = true
					break
				}
			}
			if changed {
				break
			}
		}
	}
}

// swapSpans swaps two disjoint elements of the same length when that
// makes the sequence smaller (it moves simpler elements forward).
func (s *shrinker) swapSpans() {
	for changed := true; changed && s.live(); {
		changed = false
		for i, a := range s.spans {
			for _, b := range s.spans[i+1:] {
				if a.end-a.start != b.end-b.start || a.end > b.start && b.end > a.start || max(a.end, b.end) > len(s.best) {
					continue
				}
				c := slices.Clone(s.best)
				copy(c[a.start:a.end], s.best[b.start:b.end])
				copy(c[b.start:b.end], s.best[a.start:a.end])
				if s.try(c) {
					changed = true
					break
				}
			}
			if changed {
				break
			}
		}
	}
}

func (s *shrinker) dropChunks() {
	for _, k := range []int{8, 4, 2, 1} {
		for i := len(s.best) - k; i >= 0 && s.live(); i-- {
			if i+k <= len(s.best) {
				s.try(without(s.best, i, i+k))
			}
		}
	}
}

func (s *shrinker) zeroChunks() {
	for _, k := range []int{8, 4, 2} {
		for i := len(s.best) - k; i >= 0 && s.live(); i-- {
			if i+k > len(s.best) {
				continue
			}
			c := slices.Clone(s.best)
			nonzero := false
			for j := i; j < i+k; j++ {
				nonzero = nonzero || c[j] != 0
				c[j] = 0
			}
			if nonzero {
				s.try(c)
			}
		}
	}
}

// lowerEach lowers every choice: to 0, then, for a small choice (an
// index into a pool, where a smaller value is not "less" of anything),
// every smaller value in turn, for a large one by binary search.
func (s *shrinker) lowerEach() {
	for i := len(s.best) - 1; i >= 0 && s.live(); i-- {
		if i >= len(s.best) || s.best[i] == 0 {
			continue
		}
		set := func(v uint64) bool {
			c := slices.Clone(s.best)
			c[i] = v
			return s.try(c)
		}
		if set(0) {
			continue
		}
		if v := s.best[i]; v <= 100 {
			for w := uint64(1); w < v && s.live(); w++ {
				if set(w) {
					break
				}
			}
			continue
		}
		lo, hi := uint64(0), s.best[i] // lo fails, hi works
		for hi-lo > 1 && s.live() && i < len(s.best) {
			mid := lo + (hi-lo)/2
			if set(mid) {
				if i >= len(s.best) {
					break
				}
				hi = s.best[i]
			} else {
				lo = mid
			}
		}
	}
}

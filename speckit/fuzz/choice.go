package fuzz

import "math/rand/v2"

// Choices is the sequence of choices one generated input was made from,
// in the manner of Hypothesis: every generator reads its decisions from a
// Source, so an input is its choice sequence, and shrinking edits the
// sequence (never the input), which keeps every shrunk input one the
// generator could have produced.
type Choices []uint64

// span is the part of a choice sequence one list element (a node, a step,
// a text fragment) was drawn from; deleting a span drops the element.
type span struct{ start, end int }

// Source hands out choices: replayed from a prefix, then random (or, when
// replaying a shrink candidate, 0: the simplest choice everywhere).
type Source struct {
	prefix Choices
	rng    *rand.Rand // nil: past the prefix every choice is 0
	out    Choices
	spans  []span
	open   []int
	// overrun: the prefix ran out while replaying (the input is shorter
	// than its sequence suggests; harmless).
	overrun bool
}

// maxChoices bounds one input; past it every choice is 0, which ends
// every list, so generation always terminates.
const maxChoices = 4096

func newRandomSource(rng *rand.Rand) *Source { return &Source{rng: rng} }

func newReplaySource(c Choices) *Source { return &Source{prefix: c} }

// Intn returns a choice in [0, n); 0 is the simplest.
func (s *Source) Intn(n int) int {
	if n <= 1 {
		return 0
	}
	var v uint64
	i := len(s.out)
	switch {
	case i >= maxChoices:
	case i < len(s.prefix):
		v = s.prefix[i] % uint64(n)
	case s.rng != nil:
		v = s.rng.Uint64N(uint64(n))
	default:
		s.overrun = true
	}
	s.out = append(s.out, v)
	return int(v)
}

// Chance is true with probability about p (in percent); false is the
// simpler choice.
func (s *Source) Chance(p int) bool { return s.Intn(100) >= 100-p }

// Pick returns one of xs, the first being the simplest.
func Pick[T any](s *Source, xs []T) T { return xs[s.Intn(len(xs))] }

// More is a list's "one more element?" choice, with the element's choices
// recorded as a span when it returns true (End closes it).
func (s *Source) More(p int) bool {
	if !s.Chance(p) {
		return false
	}
	s.open = append(s.open, len(s.out)-1)
	return true
}

// End closes the span the latest More opened.
func (s *Source) End() {
	n := len(s.open) - 1
	s.spans = append(s.spans, span{s.open[n], len(s.out)})
	s.open = s.open[:n]
}

// List draws up to max elements with each, continuing with probability p.
// A full list still reads (and records as 0) the choice that would have
// ended it, so that deleting an element while shrinking leaves the choices
// after the list where they were.
func (s *Source) List(p, max int, each func(i int)) int {
	n := 0
	for {
		if n == max {
			s.zero()
			return n
		}
		if !s.More(p) {
			return n
		}
		each(n)
		s.End()
		n++
	}
}

// zero reads a choice and records it as 0 (the value is not used).
func (s *Source) zero() {
	if len(s.out) < maxChoices {
		s.out = append(s.out, 0)
	}
}

// shortlexLess orders choice sequences as Hypothesis does: shorter first,
// then lexicographically; shrinking only ever moves down this order.
func shortlexLess(a, b Choices) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

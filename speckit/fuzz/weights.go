package fuzz

import (
	"strings"
	"sync"

	"github.com/subspace/kbkit/speckit/cases"
)

// caseCoverage counts what the spec's own cases (the built-in spec,
// cases.Open) exercise: command types (sent by a command or planner case,
// or as a window's local command), window event kinds, and rejection
// codes (a case's rejected, a window's toast). The generators draw what
// the cases exercise least most often (inverseWeights), so that fuzzing
// spends its inputs where the cases leave the most untested.
type caseCoverage struct {
	types  map[string]int
	events map[string]int
	codes  map[string]int
}

var (
	coverageOnce sync.Once
	coverage     caseCoverage
)

// specCoverage measures the built-in spec's cases once. Cases that do not
// load count as none (the generators then weigh every choice alike).
func specCoverage() caseCoverage {
	coverageOnce.Do(func() {
		cs, _ := cases.Open()
		coverage = measureCoverage(cs)
	})
	return coverage
}

func measureCoverage(cs []cases.Case) caseCoverage {
	cv := caseCoverage{types: map[string]int{}, events: map[string]int{}, codes: map[string]int{}}
	typeOf := func(cmd any) {
		if m, ok := cmd.(map[string]any); ok {
			if t, ok := m["type"].(string); ok {
				cv.types[t]++
			}
		}
	}
	for _, c := range cs {
		typeOf(c.When["cmd"])
		if code, ok := c.Then["rejected"].(string); ok {
			cv.codes[code]++
		}
		for _, st := range c.Steps {
			step, _ := st.(map[string]any)
			ev, _ := step["event"].(map[string]any)
			for k, v := range ev {
				cv.events[k]++
				if k == "local" {
					typeOf(v)
				}
			}
			exp, _ := step["expect"].(map[string]any)
			acts, _ := exp["actions"].([]any)
			for _, a := range acts {
				if s, ok := a.(string); ok && strings.HasPrefix(s, "toast:") {
					cv.codes[strings.TrimPrefix(s, "toast:")]++
				}
			}
		}
	}
	return cv
}

// inverseWeights weighs each name by how rarely count has it: the most
// exercised gets 1, the least 4, linearly between (all 1 when count is
// empty), so that nothing is starved and the untested is drawn most.
func inverseWeights(names []string, count map[string]int) []int {
	most := 0
	for _, n := range names {
		most = max(most, count[n])
	}
	w := make([]int, len(names))
	for i, n := range names {
		w[i] = 1
		if most > 0 {
			w[i] += 3 * (most - count[n]) / most
		}
	}
	return w
}

// rarity is inverseWeights' weight of one name among all that count has:
// 1 for the most counted, 4 for one never counted.
func rarity(count map[string]int, name string) int {
	most := 0
	for _, n := range count {
		most = max(most, n)
	}
	if most == 0 {
		return 1
	}
	return 1 + 3*(most-min(count[name], most))/most
}

// pickWeighted returns xs[i] with probability weights[i]/sum: one choice,
// the first element the simplest.
func pickWeighted[T any](s *Source, xs []T, weights []int) T {
	return xs[weightedIndex(s, weights)]
}

// weightedIndex draws an index with probability weights[i]/sum.
func weightedIndex(s *Source, weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	v := s.Intn(total)
	for i, w := range weights {
		if v < w {
			return i
		}
		v -= w
	}
	return len(weights) - 1
}

// typeWeights weighs command types by how rarely the spec's cases send
// them.
func typeWeights(types []string) []int {
	return inverseWeights(types, specCoverage().types)
}

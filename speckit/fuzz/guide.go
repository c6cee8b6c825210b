package fuzz

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/subspace/kbkit/speckit/cases"
)

// guide steers generation by what the reference did, the way a
// coverage-guided fuzzer steers by edges, but from the outside (kbcore
// stays free of counters): each input's expected side, the reference's
// reply, is summarised as features (a command's type and verdict, how
// many inverse commands it has, whether its table has a formula cycle; a
// window step's event, actions and the step before it; a plan's effects;
// the tokenizer's kinds of ref). An input that shows a feature no earlier
// input showed joins the suite's corpus, and half of the later inputs are
// a corpus input's choice sequence, mutated, so that generation keeps
// building on the states that were hard to reach.
//
// Features come from the reference, never from the implementation under
// test, so the same seed draws the same inputs against any implementation
// (up to the first difference), and mutants of a choice sequence are
// still choice sequences: the shrinker shrinks them as any other input.
type guide struct {
	seen   map[string]bool
	corpus map[string][]entry // by suite
}

// entry is a corpus input and its energy: how much more often than
// others it is mutated. An input whose reply holds a rejection code or
// toast the spec's cases use rarely has more (inverseWeights over the
// codes the cases use), so that the fuzzer dwells where they test least.
type entry struct {
	choices Choices
	energy  int
}

// corpusMax bounds a suite's corpus; past it a new input replaces a
// random one.
const corpusMax = 256

func newGuide() *guide {
	return &guide{seen: map[string]bool{}, corpus: map[string][]entry{}}
}

// source is the source of the next input of suite: rng's random choices,
// or, half of the time once the suite has a corpus, a mutated corpus
// input's choices followed by rng's.
func (g *guide) source(suite string, rng *rand.Rand) *Source {
	cs := g.corpus[suite]
	if len(cs) == 0 || rng.IntN(2) == 0 {
		return newRandomSource(rng)
	}
	total := 0
	for _, e := range cs {
		total += e.energy
	}
	v := rng.IntN(total)
	pick := cs[len(cs)-1]
	for _, e := range cs {
		if v < e.energy {
			pick = e
			break
		}
		v -= e.energy
	}
	return &Source{prefix: mutateChoices(pick.choices, rng), rng: rng}
}

// observe adds the input drawn from choices to suite's corpus when the
// reference's reply (c, the case with its expected side) shows a new
// feature; rng picks the entry a full corpus gives up.
func (g *guide) observe(suite string, c cases.Case, choices Choices, rng *rand.Rand) {
	fresh := false
	fs := features(c)
	for _, f := range fs {
		if !g.seen[f] {
			g.seen[f], fresh = true, true
		}
	}
	if !fresh {
		return
	}
	e := entry{choices: slices.Clone(choices), energy: codeEnergy(c)}
	cs := g.corpus[suite]
	if len(cs) < corpusMax {
		g.corpus[suite] = append(cs, e)
		return
	}
	cs[rng.IntN(len(cs))] = e
}

// codeEnergy is the energy of an input: the weight of the rarest (in the
// spec's cases) rejection code or toast its reply holds, 1 without any.
func codeEnergy(c cases.Case) int {
	var codes []string
	if code, ok := c.Then["rejected"].(string); ok {
		codes = append(codes, code)
	}
	for _, st := range c.Steps {
		step, _ := st.(map[string]any)
		exp, _ := step["expect"].(map[string]any)
		acts, _ := exp["actions"].([]any)
		for _, a := range acts {
			if s, _ := a.(string); strings.HasPrefix(s, "toast:") {
				codes = append(codes, strings.TrimPrefix(s, "toast:"))
			}
		}
	}
	energy := 1
	for _, code := range codes {
		energy = max(energy, rarity(specCoverage().codes, code))
	}
	return energy
}

// mutateChoices returns a changed copy of c: a few choices redrawn, a
// run of choices repeated elsewhere (a node, a step, a fragment again),
// a run deleted, or the tail cut off (drawn afresh).
func mutateChoices(c Choices, rng *rand.Rand) Choices {
	out := slices.Clone(c)
	if len(out) == 0 {
		return out
	}
	for range 1 + rng.IntN(2) {
		if len(out) == 0 {
			break
		}
		i := rng.IntN(len(out))
		j := min(len(out), i+1+rng.IntN(32))
		switch rng.IntN(4) {
		case 0:
			for range 1 + rng.IntN(3) {
				out[rng.IntN(len(out))] = rng.Uint64()
			}
		case 1:
			k := rng.IntN(len(out) + 1)
			out = slices.Insert(out, k, slices.Clone(out[i:j])...)
		case 2:
			out = slices.Delete(out, i, j)
		default:
			out = out[:i]
		}
	}
	return out[:min(len(out), maxChoices)]
}

// features summarises what the reference did with one input.
func features(c cases.Case) []string {
	switch c.Suite() {
	case cases.SuiteCommands:
		return commandFeatures(c)
	case cases.SuiteWindow:
		return windowFeatures(c)
	case cases.SuitePlanner:
		return planFeatures(c)
	case cases.SuiteTokenizer:
		return tokenFeatures(c)
	case cases.SuiteCanonical:
		return canonicalFeatures(c)
	}
	return nil
}

// bucket coarsens a count: 0, 1, 2, 3-4, 5-8, 9+.
func bucket(n int) string {
	switch {
	case n <= 2:
		return fmt.Sprint(n)
	case n <= 4:
		return "3-4"
	case n <= 8:
		return "5-8"
	}
	return "9+"
}

func commandFeatures(c cases.Case) []string {
	t := "c|" + commandArea(c.When["cmd"])
	if code, ok := c.Then["rejected"]; ok {
		return []string{fmt.Sprintf("%s|rejected:%v", t, code)}
	}
	inv, _ := c.Then["inverse"].([]any)
	out := []string{t + "|accepted", t + "|inverse:" + bucket(len(inv))}
	idx, _ := c.Then["index"].(map[string]any)
	for _, x := range idx {
		e, _ := x.(map[string]any)
		deps, _ := e["deps"].([]any)
		cyc, _ := e["cycles"].([]any)
		out = append(out, t+"|deps:"+bucket(len(deps))+"|cycles:"+bucket(len(cyc)))
	}
	doc, _ := c.Then["doc"].(map[string]any)
	nodes, _ := doc["nodes"].([]any)
	out = append(out, t+"|depth:"+bucket(treeDepth(nodes)))
	return out
}

// treeDepth is the depth of the deepest node of plain node records.
func treeDepth(nodes []any) int {
	parent := map[string]string{}
	for _, n := range nodes {
		m, _ := n.(map[string]any)
		id, _ := m["id"].(string)
		p, _ := m["parent"].(string)
		parent[id] = p
	}
	deepest := 0
	for id := range parent {
		d := 0
		for p := parent[id]; p != "" && d <= len(parent); p = parent[p] {
			d++
		}
		deepest = max(deepest, d)
	}
	return deepest
}

func windowFeatures(c cases.Case) []string {
	var out []string
	prev := "start"
	for _, st := range c.Steps {
		step, _ := st.(map[string]any)
		ev, _ := step["event"].(map[string]any)
		kind := ""
		for k, v := range ev {
			kind = k
			if m, ok := v.(map[string]any); ok && k == "local" {
				kind += ":" + commandArea(m)
			}
		}
		exp, _ := step["expect"].(map[string]any)
		acts, _ := exp["actions"].([]any)
		pending, _ := exp["pending"].([]any)
		var names []string
		for _, a := range acts {
			s, _ := a.(string)
			if strings.HasPrefix(s, "send:") {
				s = "send"
			}
			if !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
		sort.Strings(names)
		a := strings.Join(names, ",")
		out = append(out, "w|"+prev+">"+kind+"|"+a, "w|"+kind+"|"+a+"|pending:"+bucket(len(pending)))
		prev = kind
	}
	return out
}

func planFeatures(c cases.Case) []string {
	t := "p|" + commandArea(c.When["cmd"])
	if code, ok := c.Then["rejected"]; ok {
		return []string{fmt.Sprintf("%s|rejected:%v", t, code)}
	}
	effects, _ := c.Then["effects"].([]any)
	var kinds []string
	for _, e := range effects {
		m, _ := e.(map[string]any)
		kinds = append(kinds, commandArea(m["cmd"]))
	}
	if len(kinds) > 6 {
		kinds = append(kinds[:6], "...")
	}
	pages, _ := c.Then["pages"].(map[string]any)
	return []string{t + "|" + strings.Join(kinds, ","), t + "|pages:" + bucket(len(pages))}
}

func tokenFeatures(c cases.Case) []string {
	t := "t|text"
	if _, ok := c.When["formula"]; ok {
		t = "t|formula"
	}
	refs, _ := c.Then["refs"].([]any)
	deps, _ := c.Then["deps"].([]any)
	out := []string{t + "|refs:" + bucket(len(refs)) + "|deps:" + bucket(len(deps))}
	for _, r := range refs {
		m, _ := r.(map[string]any)
		out = append(out, fmt.Sprintf("%s|ref:%v", t, m["kind"]))
	}
	if l, ok := c.Then["label"].(map[string]any); ok {
		out = append(out, t+"|label:"+bucket(len(l)))
	}
	return out
}

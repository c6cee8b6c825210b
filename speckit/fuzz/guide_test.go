package fuzz

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// TestCaseCoverageWeights: the spec's cases are measured (every window
// event kind and command type is counted), and the generators' weights
// favour what they exercise least.
func TestCaseCoverageWeights(t *testing.T) {
	cv := specCoverage()
	for _, ev := range windowEventNames {
		if cv.events[ev] == 0 {
			t.Errorf("no window case has a %s event (or the measure is broken)", ev)
		}
	}
	for _, typ := range kbcore.Types {
		if cv.types[typ] == 0 {
			t.Errorf("no case sends %s (or the measure is broken)", typ)
		}
	}
	w := typeWeights(kbcore.Types)
	most, least := kbcore.Types[0], kbcore.Types[0]
	for _, typ := range kbcore.Types {
		if cv.types[typ] > cv.types[most] {
			most = typ
		}
		if cv.types[typ] < cv.types[least] {
			least = typ
		}
	}
	if wm, wl := w[slices.Index(kbcore.Types, most)], w[slices.Index(kbcore.Types, least)]; wm != 1 || wl <= wm {
		t.Errorf("weights: %s (%d cases) %d, %s (%d cases) %d", most, cv.types[most], wm, least, cv.types[least], wl)
	}
	var codes []string
	for c := range cv.codes {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	sort.SliceStable(codes, func(i, j int) bool { return cv.codes[codes[i]] > cv.codes[codes[j]] })
	if len(codes) < 2 {
		t.Fatalf("the cases use %d rejection codes", len(codes))
	}
	if r := rarity(cv.codes, codes[0]); r != 1 {
		t.Errorf("the most used code %s has rarity %d, want 1", codes[0], r)
	}
	if r := rarity(cv.codes, codes[len(codes)-1]); r <= 1 {
		t.Errorf("the least used code %s has rarity %d, want more than 1", codes[len(codes)-1], r)
	}
	if r := rarity(cv.codes, "no-such-code"); r != 4 {
		t.Errorf("a code no case uses has rarity %d, want 4", r)
	}
	t.Logf("command types: %v\nweights %v\nwindow events: %v\nrejection codes and toasts: %v", cv.types, w, cv.events, cv.codes)
}

// TestWeightedPickShrinksToFirst: a weighted pick reads one choice, and
// the choice 0 picks the first element (the simplest, as with Pick).
func TestWeightedPickShrinksToFirst(t *testing.T) {
	s := newReplaySource(Choices{0, 8})
	if got := pickWeighted(s, []string{"a", "b", "c"}, []int{1, 4, 4}); got != "a" {
		t.Errorf("choice 0: %s, want a", got)
	}
	if got := pickWeighted(s, []string{"a", "b", "c"}, []int{1, 4, 4}); got != "c" {
		t.Errorf("choice 8 of 1+4+4: %s, want c", got)
	}
	if len(s.out) != 2 {
		t.Errorf("read %d choices, want 2", len(s.out))
	}
}

// TestGuideIsDeterministic: two runs with the same seed build the same
// corpus (features come from the reference alone), and the corpus grows.
func TestGuideIsDeterministic(t *testing.T) {
	corpus := func() map[string][]entry {
		o := Options{Impl: cases.Reference{}, Suites: cases.Suites, Seed: 5, Count: 300}
		f := &fuzzer{o: o, impl: &recorder{Impl: o.Impl}, areas: map[string]*Difference{}, guide: newGuide(), types: kbcore.Types}
		if _, err := f.run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return f.guide.corpus
	}
	a, b := corpus(), corpus()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs of one seed built different corpora")
	}
	for _, s := range cases.Suites {
		if len(a[s]) < 5 {
			t.Errorf("%s: corpus of %d inputs after 75", s, len(a[s]))
		}
		t.Logf("%s: %d corpus inputs", s, len(a[s]))
	}
}

// TestGeneratorsBuildDeepStructure: within a few hundred inputs the
// generators build what flat random inputs did not: a table whose
// formula graph has a cycle and one with a cell two others read, a
// window script that restores several roots, undoes that with several
// commands and redoes it, and a planner workspace with a page merged
// into a merged page.
func TestGeneratorsBuildDeepStructure(t *testing.T) {
	f := &fuzzer{types: kbcore.Types}
	found := map[string]int{}
	for i := range 400 {
		for _, suite := range []string{cases.SuiteCommands, cases.SuiteWindow, cases.SuitePlanner} {
			c, err := f.generate(suite, newRandomSource(rand.New(rand.NewPCG(11, uint64(i)))))
			if err != nil {
				continue
			}
			full, err := Expected(context.Background(), cases.Reference{}, c)
			if err != nil {
				continue
			}
			for _, k := range deepShapes(full) {
				found[k]++
			}
		}
	}
	for _, k := range []string{"formula cycle", "shared cell", "undo of several commands, redone", "merged into a merged page"} {
		if found[k] == 0 {
			t.Errorf("no input of 400 has a %s", k)
		}
	}
	t.Logf("%v", found)
}

// deepShapes names the deep structures a case (with its expected side)
// has.
func deepShapes(c cases.Case) []string {
	var out []string
	switch c.Suite() {
	case cases.SuiteCommands:
		doc, _ := c.Given["doc"].(map[string]any)
		nodes, _ := doc["nodes"].([]any)
		for _, n := range nodes {
			m, _ := n.(map[string]any)
			cells, _ := m["cells"].(map[string]any)
			x := kbcore.IndexNode(kbcore.Node{Kind: kbcore.KindTable, Cells: stringMap(cells)})
			if len(x.Cycles) > 0 {
				out = append(out, "formula cycle")
			}
			readers := map[string]map[string]bool{}
			for _, d := range x.Deps {
				if d.On.Cell != "" && d.On.Cell != d.Cell {
					if readers[d.On.Cell] == nil {
						readers[d.On.Cell] = map[string]bool{}
					}
					readers[d.On.Cell][d.Cell] = true
				}
			}
			for _, r := range readers {
				if len(r) >= 2 {
					out = append(out, "shared cell")
					break
				}
			}
		}
	case cases.SuiteWindow:
		// A local step sending one command, an undo sending two, a redo
		// sending two: the undo entry of a restore of several roots.
		stage := 0
		for _, st := range c.Steps {
			step, _ := st.(map[string]any)
			ev, _ := step["event"].(map[string]any)
			exp, _ := step["expect"].(map[string]any)
			acts, _ := exp["actions"].([]any)
			sends := 0
			for _, a := range acts {
				if s, _ := a.(string); len(s) > 5 && s[:5] == "send:" {
					sends++
				}
			}
			switch {
			case stage == 0 && ev["local"] != nil && commandArea(ev["local"]) == kbcore.TypeRestore && sends == 1:
				stage = 1
			case stage == 1 && ev["undo"] != nil && sends >= 2:
				stage = 2
			case stage == 2 && ev["redo"] != nil && sends >= 2:
				stage = 3
			}
		}
		if stage == 3 {
			out = append(out, "undo of several commands, redone")
		}
		if stage >= 1 {
			out = append(out, fmt.Sprintf("window stage %d", stage))
		}
	case cases.SuitePlanner:
		into := map[string]string{}
		pages, _ := c.Given["pages"].([]any)
		for _, p := range pages {
			m, _ := p.(map[string]any)
			rec, _ := m["page"].(map[string]any)
			id, _ := rec["id"].(string)
			into[id], _ = rec["merged_into"].(string)
		}
		for _, t := range into {
			if t != "" && into[t] != "" {
				out = append(out, "merged into a merged page")
				break
			}
		}
	}
	return out
}

func stringMap(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

package fuzz

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/subspace/kbkit/speckit/cases"
)

// deepMutants change behaviour only in states a flat random input rarely
// reaches: a formula graph with a shared cell or a three-cell cycle, an
// undo step of several commands, a restore-page whose merge target was
// merged in turn or holds a namesake of a restored root below its root.
// Most pass every case of the spec (the test logs how many each fails),
// so the fuzzer's structured generators are what tells them apart.
var deepMutants = []mutant{
	// A1 =B1+C1, B1 1, C1 =B1: C1 meets B1 finished, in no component.
	{"cycle-search-without-on-stack", "index", "commands", "kbcore/index.go",
		"} else if onStack[w] && index[w] < low[f.v] {", "} else if index[w] < low[f.v] {"},
	// A1 -> B1 -> C1 -> A1: B1 never learns that C1 reached A1.
	{"cycle-low-not-propagated", "index", "commands", "kbcore/index.go",
		"if p := call[len(call)-1].v; low[v] < low[p] {", "if p := call[len(call)-1].v; false && low[v] < low[p] {"},
	// Restore two roots, undo, redo, the server rejects the first redo
	// command: the inverses were recorded in forward order.
	{"undo-inverses-forward-order", "window", "window", "kbcore/window.go",
		"revert = append(inverse, revert...)", "revert = append(revert, inverse...)"},
	// Only the first command of a several-command undo is linked to what
	// it reverts: a rejection of that leaves the second pending.
	{"undo-links-first-command-only", "window", "window", "kbcore/window.go",
		"for _, c := range cmds {\n\t\tif w.isPending(c.ID) {\n\t\t\tif w.reverts == nil {",
		"for _, c := range cmds[:1] {\n\t\tif w.isPending(c.ID) {\n\t\t\tif w.reverts == nil {"},
	// An undo of several commands given one id twice stops half way.
	{"undo-same-id-twice-unchecked", "window", "window", "kbcore/window.go",
		"if w.isPending(id) || contains(ids[:i], id) {", "if w.isPending(id) || i < 0 {"},
	// restore-page takes its names back from a merge target that was
	// merged in turn.
	{"unmerge-from-merged-target", "planner", "planner", "kbcore/plan.go",
		"if !ok || !target.page.Born() || target.page.Merged() {", "if !ok || !target.page.Born() {"},
	// restore-page deletes, on the merge target, a node named like one of
	// its roots that is no longer a root there.
	{"unmerge-deletes-nested-namesake", "planner", "planner", "kbcore/plan.go",
		`if n, ok := target.get(id); ok && n.Parent == "" {`, `if _, ok := target.get(id); ok {`},
	// A rename rewrites the refs of a page merged by the same plan on the
	// merged page, not on its target.
	{"rewrite-on-merged-page", "planner", "planner", "kbcore/plan.go",
		"if d, ok := p.doc(at.PageID); ok && d.page.Merged() {", "if d, ok := p.doc(at.PageID); ok && false && d.page.Merged() {"},
}

// deepBudget is how many inputs of its suite a deep mutant gets: the
// generators must reach each one's state well within it.
const deepBudget = 3000

// TestFuzzKillsDeepMutants: with a fixed seed and an input budget (no
// clock), `spec fuzz` over the mutant's suite finds each deep mutant and
// shrinks the difference to a case that the reference passes and the
// mutant fails. KBKIT_FUZZ_DEEP_BUDGET overrides the budget (a larger one
// measures how many inputs a weaker generator would need),
// KBKIT_FUZZ_DEEP_SEED the seed; KBKIT_FUZZ_DEEP=<name> runs one mutant.
func TestFuzzKillsDeepMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a mutant adapter each")
	}
	budget := deepBudget
	if v := os.Getenv("KBKIT_FUZZ_DEEP_BUDGET"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("KBKIT_FUZZ_DEEP_BUDGET=%q: not a positive count", v)
		}
		budget = n
	}
	seed := uint64(1)
	if v := os.Getenv("KBKIT_FUZZ_DEEP_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("KBKIT_FUZZ_DEEP_SEED=%q: not a seed", v)
		}
		seed = n
	}
	only := os.Getenv("KBKIT_FUZZ_DEEP")
	specCases := cases.ForTest(t)
	for _, m := range deepMutants {
		if only != "" && only != m.name {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			c := startAdapter(t, buildAdapter(t, &m))
			caught := 0 // spec cases the mutant fails
			for _, sc := range specCases {
				if o := cases.Check(context.Background(), c, sc); o.Status == cases.Fail || o.Status == cases.Error {
					caught++
				}
			}
			rep, err := Run(context.Background(), Options{Impl: c, Suites: []string{m.suite}, Seed: seed,
				Count: budget, MaxDifferences: 1, ShrinkTime: time.Hour, ShrinkTests: 3000})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Differences) == 0 {
				t.Fatalf("fails %d spec cases; survived %d inputs of %s (%v)", caught, rep.Inputs, m.suite, rep.Elapsed.Round(time.Millisecond))
			}
			d := rep.Differences[0]
			t.Logf("%s: fails %d spec cases; found at input %d (%v); shrunk %d -> %d choices, %d -> %d bytes in %d trials\n%s\n%s",
				m.name, caught, d.Input, d.FoundAfter.Round(time.Millisecond), d.Original.Choices, d.Shrunk.Choices,
				d.Original.Bytes, d.Shrunk.Bytes, d.ShrinkTests, d.Outcome.Diff, CaseYAML(d.Case))
			file, err := cases.Parse("fuzz.yaml", []byte(CaseFile(d.Case)))
			if err != nil {
				t.Fatalf("the printed case does not load: %v", err)
			}
			printed := file.Cases[0]
			if o := cases.Check(context.Background(), cases.Reference{}, printed); o.Status != cases.Pass {
				t.Errorf("the printed case against the reference: %s %s", o.Status, o.Diff)
			}
			if o := cases.Check(context.Background(), c, printed); o.Status != cases.Fail {
				t.Errorf("the printed case against the mutant: %s, want fail", o.Status)
			}
		})
	}
}

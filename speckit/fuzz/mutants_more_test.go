package fuzz

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/subspace/kbkit/speckit/cases"
)

// moreMutants widen the planted set for a kill-rate measurement; they run
// only with KBKIT_FUZZ_MUTANTS=all or =<name> (each is a build and up to
// 20 s):
//
//	KBKIT_FUZZ_MUTANTS=all go test ./speckit/fuzz -run TestFuzzKillRate -v
var moreMutants = []mutant{
	{"rank-midpoint-rounds-down", "ranks", "commands", "kbcore/rank/rank.go",
		"return string(append(out, digits[(da+db+1)/2])), nil",
		"return string(append(out, digits[(da+db)/2])), nil"},
	{"tag-stops-at-combining-mark", "tokenizer", "tokenizer", "kbcore/token/token.go",
		"case unicode.IsLetter(r), unicode.IsMark(r):",
		"case unicode.IsLetter(r):"},
	{"outdent-places-first", "commands", "commands", "kbcore/apply.go",
		"return t.place(n, q.Parent, q, nil)",
		"return t.place(n, q.Parent, nil, nil)"},
	{"echo-gap-of-two-applies", "window", "window", "kbcore/window.go",
		"case seq > w.seq+1:",
		"case seq > w.seq+2:"},
	{"merge-forgets-title-alias", "planner", "planner", "kbcore/plan.go",
		"for _, a := range append([]string{src.Title}, src.Aliases...) {",
		"for _, a := range src.Aliases {"},
	{"move-after-itself", "commands", "commands", "kbcore/apply.go",
		"if a.Parent != parent || a.ID == n.ID {", "if a.Parent != parent {"},
	{"restore-inverse-only-top-roots", "commands", "commands", "kbcore/apply.go",
		"if !in[n.Parent] {", `if n.Parent == "" {`},
	{"restore-taken-rank-to-end", "ranks", "commands", "kbcore/apply.go",
		"rk, err := rank.Between(n.Rank, t.d.rankAbove(n.Parent, n.Rank))", `rk, err := rank.Between(n.Rank, "")`},
	{"set-cell-empty-kept", "commands", "commands", "kbcore/apply.go",
		"delete(cells, *p.Cell)", `cells[*p.Cell] = ""`},
	{"title-allows-del", "commands", "commands", "kbcore/apply.go",
		"if r < 0x20 || r == 0x7f {", "if r < 0x20 {"},
	{"rank-hint-equal-to-lower", "ranks", "commands", "kbcore/apply.go",
		`(lo == "" || lo < *hint)`, `(lo == "" || lo <= *hint)`},
	{"duplicate-echo-applied", "window", "window", "kbcore/window.go",
		"case seq <= w.seq:", "case seq < w.seq:"},
	{"new-edit-keeps-redo", "window", "window", "kbcore/window.go",
		"w.redo.clear() // a new edit ends the redo history", "// a new edit keeps the redo history"},
	{"unmerge-drops-title-only", "planner", "planner", "kbcore/plan.go",
		"if !contains(names, a) {", "if !contains(names[:1], a) {"},
	{"tag-after-tab-or-newline", "tokenizer", "tokenizer", "kbcore/token/token.go",
		"return c == ' ' || c >= '\\t' && c <= '\\r'", "return c == ' '"},
	{"undo-chain-not-dropped", "window", "window", "kbcore/window.go",
		"rejected[c.ID] = true\n\t\t\t\tw.forget(c.ID)\n\t\t\t\tdelete(w.reverts, c.ID)",
		"w.forget(c.ID)\n\t\t\t\tdelete(w.reverts, c.ID)"},
	{"label-dollar-only-currency", "tokenizer", "tokenizer", "kbcore/token/label.go",
		"if r == '%' || r == '$' || r >= utf8.RuneSelf && unicode.Is(unicode.Sc, r) {", "if r == '%' || r == '$' {"},
	{"tag-after-unicode-space-no", "tokenizer", "tokenizer", "kbcore/token/token.go",
		"return unicode.IsSpace(r)", "return r == 0x00a0"},
	{"rename-keeps-new-title-alias", "commands", "commands", "kbcore/apply.go",
		"if a != title && !contains(aliases, a) {", "if !contains(aliases, a) {"},
	{"set-outputs-inverse-new", "commands", "commands", "kbcore/apply.go",
		"Outputs: ptr(n.Outputs)})}", "Outputs: p.Outputs})}"},
}

// TestFuzzKillRate runs every mutant (the planted set and moreMutants)
// for at most 20 s over its suite and reports which were found, how fast,
// and how far their differences shrank, beside how many of the spec's
// cases the mutant fails (0: only the fuzzer tells it from the reference).
func TestFuzzKillRate(t *testing.T) {
	only := os.Getenv("KBKIT_FUZZ_MUTANTS")
	if only == "" {
		t.Skip("set KBKIT_FUZZ_MUTANTS=all (or a mutant's name) to measure the kill rate")
	}
	specCases, err := cases.Open()
	if err != nil {
		t.Fatal(err)
	}
	killed, ran, all := 0, 0, append(append([]mutant(nil), mutants...), moreMutants...)
	for _, m := range all {
		if only != "all" && only != m.name {
			continue
		}
		ran++
		c := startAdapter(t, buildAdapter(t, &m))
		caught := 0 // spec cases the mutant fails
		for _, sc := range specCases {
			if o := cases.Check(context.Background(), c, sc); o.Status == cases.Fail || o.Status == cases.Error {
				caught++
			}
		}
		rep, err := Run(context.Background(), Options{Impl: c, Suites: []string{m.suite}, Seed: 1,
			Duration: 20 * time.Second, MaxDifferences: 1})
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Differences) == 0 {
			t.Logf("%-32s %-9s fails %3d spec cases; survived %d inputs", m.name, m.area, caught, rep.Inputs)
			continue
		}
		killed++
		d := rep.Differences[0]
		t.Logf("%-32s %-9s fails %3d spec cases; found at input %d after %v; shrunk %d -> %d bytes (%d -> %d choices) in %v",
			m.name, m.area, caught, d.Input, d.FoundAfter.Round(time.Millisecond), d.Original.Bytes, d.Shrunk.Bytes,
			d.Original.Choices, d.Shrunk.Choices, d.ShrinkTime.Round(time.Millisecond))
	}
	t.Logf("killed %d of %d mutants", killed, ran)
}

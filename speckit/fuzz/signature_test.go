package fuzz

import (
	"slices"
	"strings"
	"testing"

	"github.com/subspace/kbkit/speckit/cases"
)

// A difference's signatures name its area, command type or step kind and
// the fields its diff has sections for (as the case runner writes them),
// never its input; each is one SignatureSpace lists, so an entry written
// from a printed signature is accepted on load.
func TestSignatures(t *testing.T) {
	cmd := func(typ string) map[string]any { return map[string]any{"cmd": map[string]any{"type": typ}} }
	window := cases.Case{Steps: []any{
		map[string]any{"event": map[string]any{"local": map[string]any{}}},
		map[string]any{"event": map[string]any{"echo": map[string]any{}}},
		map[string]any{"event": map[string]any{"undo": map[string]any{}}},
	}, Given: map[string]any{"doc": map[string]any{}}}
	planner := cases.Case{When: map[string]any{"cmd": map[string]any{"type": "merge-page"}, "page": "p"}, Given: map[string]any{"pages": []any{}}}
	for _, tc := range []struct {
		name string
		c    cases.Case
		out  cases.Outcome
		want string
	}{
		{"command fields", cases.Case{When: cmd("edit-text"), Given: map[string]any{"doc": map[string]any{}}},
			cases.Outcome{Status: cases.Fail, Diff: "index:\n  {\n- \"a\"\n+ \"b\"\ndoc:\n  x\n- y\n"}, "edit-text/fuzz:doc edit-text/fuzz:index"},
		{"command verdict", cases.Case{When: cmd("move-node"), Given: map[string]any{"doc": map[string]any{}}},
			cases.Outcome{Status: cases.Fail, Diff: "- rejected: node-not-found\n+ accepted:\n+   doc: {}\n"}, "move-node/fuzz:rejected"},
		{"command error", cases.Case{When: cmd("no-such"), Given: map[string]any{"doc": map[string]any{}}},
			cases.Outcome{Status: cases.Error, Diff: "adapter crashed"}, "unknown-type/fuzz:error"},
		{"tokenizer", cases.Case{When: map[string]any{"formula": "=1"}},
			cases.Outcome{Status: cases.Fail, Diff: "deps:\n- []\n+ [1]\nrefs:\n- []\n+ [2]\n"}, "tokenizer/fuzz:formula:deps tokenizer/fuzz:formula:refs"},
		{"window, first step", window,
			cases.Outcome{Status: cases.Fail, Diff: "step 2 pending:\n  event: {\"echo\":{}}\n- [\"a\"]\n+ []\nstep 2 actions:\n  event: {}\n- 1\nstep 3 seq:\n  event: {}\n- 1\n+ 2\n"},
			"window/fuzz:echo:actions window/fuzz:echo:pending"},
		{"window, state count", window, cases.Outcome{Status: cases.Fail, Diff: "- 3 states (one per step)\n+ 2 states\n"}, "window/fuzz:script:states"},
		{"planner", planner, cases.Outcome{Status: cases.Fail, Diff: "pages.p2: not touched by the plan\neffects:\n- []\n"}, "planner/fuzz:merge-page:effects planner/fuzz:merge-page:pages"},
		{"nothing named", planner, cases.Outcome{Status: cases.Fail, Diff: "+ something else\n"}, "planner/fuzz:merge-page:other"},
	} {
		got := Signatures(tc.c, tc.out)
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.want)
		}
		for _, s := range got {
			if !slices.Contains(SignatureSpace(), s) {
				t.Errorf("%s: %s is not in SignatureSpace", tc.name, s)
			}
		}
	}
}

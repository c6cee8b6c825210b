package selftest

import (
	"bytes"
	"strings"
	"testing"
)

// A report renders in every format, each naming every control, zoo
// entry, area and survivor, and its JSON reads back to the same Markdown.
func TestRenderings(t *testing.T) {
	seed := int64(2)
	rep := &Report{Profile: Quick,
		Controls: []Result{
			{Kind: KindServer, Name: "double-echo", Breaks: "logs | twice", Suite: SuiteSim, Status: Caught, CaughtBy: []string{"exactly-once"}, Seed: &seed, Seeds: 2},
			{Kind: KindZoo, Name: "stale-page", Suite: SuiteSim, Status: Missed, Seeds: 3, Detail: "no checker failed"},
			{Kind: KindAdapter, Name: "speckit/adapters/broken", Suite: SuiteSpecFuzz, Status: Errored, Detail: "node is not installed"},
		},
		Mutants: []MutantResult{
			{Mutant: Mutant{Area: "ranks", File: "kbcore/rank/rank.go", Line: 7, Func: "midpoint", Kind: EditFlip, Old: "<", New: "<="}, Status: MutantSurvived},
			{Mutant: Mutant{Area: "ranks", File: "kbcore/rank/rank.go", Line: 9, Func: "midpoint", Kind: EditDropStmt, Old: "x++", New: ""}, Status: MutantEquivalent, Reason: "unreachable"},
		},
		Areas: []AreaScore{{Area: "ranks", Mutants: 2, Equivalent: 1, KilledBy: map[string]int{}}},
	}
	rep.Zoo = zooRecords(rep.Controls)
	var text, html, md, js bytes.Buffer
	rep.WriteText(&text)
	rep.WriteMarkdown(&md)
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "html": html.String(), "markdown": md.String()} {
		for _, want := range []string{"double-echo", "stale-page", "speckit/adapters/broken", "ranks", "kbcore/rank/rank.go:7"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s has no %q:\n%s", name, want, out)
			}
		}
	}
	if !strings.Contains(md.String(), `logs \| twice`) {
		t.Errorf("a | in a cell is not escaped:\n%s", md.String())
	}
	back, err := ReadJSON(js.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var md2 bytes.Buffer
	back.WriteMarkdown(&md2)
	if md2.String() != md.String() {
		t.Errorf("the JSON does not read back to the same Markdown:\n%s\n---\n%s", md.String(), md2.String())
	}
	if got := rep.ExitCode(); got != 2 {
		t.Errorf("exit code %d with an errored control, want 2", got)
	}
	rep.Controls = rep.Controls[:2]
	if got := rep.ExitCode(); got != 1 {
		t.Errorf("exit code %d with a missed control, want 1", got)
	}
}

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/subspace/kbkit/selftest"
	"github.com/subspace/kbkit/sim/broken"
)

// docs/power.md is what `kbkit selftest --markdown` writes of the report
// kept beside it (docs/power.json, written by the same run with --json):
// no figure of it is typed. And that report covers every control the kit
// ships today: each broken server, each bug of the example client, the
// broken adapter, the zoo and each area of the mutants. A new control
// without a new report fails here: regenerate both with
//
//	kbkit selftest --json docs/power.json --markdown docs/power.md
func TestPowerDocIsGenerated(t *testing.T) {
	root, err := selftest.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "power.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := selftest.ReadJSON(b)
	if err != nil {
		t.Fatalf("docs/power.json: %v", err)
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "power.md"))
	if err != nil {
		t.Fatal(err)
	}
	if md.String() != string(doc) {
		t.Errorf("docs/power.md is not the Markdown of docs/power.json (edited by hand, or from another run): regenerate both")
	}

	ran := map[string]bool{} // suite + " " + name
	for _, c := range rep.Controls {
		ran[c.Suite+" "+c.Name] = true
	}
	for _, row := range broken.Table {
		suite := selftest.SuiteSim
		if broken.WireOnly(row.Name) {
			suite = selftest.SuiteProtocol
		}
		if !ran[suite+" "+row.Name] {
			t.Errorf("the report has no run of the broken server %s under %s", row.Name, suite)
		}
	}
	window, err := os.ReadFile(filepath.Join(root, "examples", "client-js", "window.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(window), "export const BROKEN = {")
	block, _, _ = strings.Cut(block, "\n};")
	bugs := regexp.MustCompile(`(?m)^\s+"([a-z0-9-]+)":`).FindAllStringSubmatch(block, -1)
	if len(bugs) == 0 {
		t.Fatal("found no bug in window.mjs's BROKEN")
	}
	for _, m := range bugs {
		if !ran[selftest.SuiteClient+" "+m[1]] {
			t.Errorf("the report has no run of the client bug %s under %s", m[1], selftest.SuiteClient)
		}
	}
	for _, s := range []string{selftest.SuiteSpecRun, selftest.SuiteSpecFuzz} {
		if !ran[s+" speckit/adapters/broken"] {
			t.Errorf("the report has no run of the broken adapter under %s", s)
		}
	}
	for _, z := range selftest.Zoo {
		found := false
		for _, r := range rep.Zoo {
			found = found || (r.Name == z.Name && len(r.Results) > 0)
		}
		if !found {
			t.Errorf("the report has no run of the zoo's %s", z.Name)
		}
	}
	areas := map[string]bool{}
	for _, a := range rep.Areas {
		areas[a.Area] = a.Mutants > 0
	}
	for _, a := range selftest.Areas {
		if !areas[a.Name] {
			t.Errorf("the report judged no mutant of %s", a.Name)
		}
	}
}

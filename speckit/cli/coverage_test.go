package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/subspace/kbkit/spec"
)

// TestSpecCoverage: the built-in spec has every MUST tested or waived
// (exit 0); a spec directory with an untested MUST exits 1 and lists it;
// bad input exits 2 and writes nothing on stdout.
func TestSpecCoverage(t *testing.T) {
	code, out, errOut := kbkit(t, "", "spec", "coverage")
	if code != 0 || !strings.Contains(out, "model.tree MUST README.md:") || !strings.Contains(out, "waived: ") {
		t.Fatalf("built-in spec: exit %d, stderr %s, stdout:\n%.2000s", code, errOut, out)
	}
	code, out, _ = kbkit(t, "", "spec", "coverage", "--uncovered", "--json", "-")
	var rep struct {
		Requirements []struct{ ID, Level string }
		Summary      struct {
			UncoveredMUST int `json:"uncovered_must"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("--uncovered --json -: exit %d, %v:\n%s", code, err, out)
	}
	for _, r := range rep.Requirements {
		if r.Level != "SHOULD" {
			t.Errorf("--uncovered lists %s %s on a spec whose every MUST is covered", r.ID, r.Level)
		}
	}

	// A copy of the built-in spec, edited below.
	dir := t.TempDir()
	if err := os.CopyFS(dir, spec.FS); err != nil {
		t.Fatal(err)
	}
	edit := func(name, add string) func() {
		t.Helper()
		p := filepath.Join(dir, name)
		old, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(slices.Clone(old), add...), 0o644); err != nil {
			t.Fatal(err)
		}
		return func() { os.WriteFile(p, old, 0o644) }
	}
	if code, _, errOut = kbkit(t, "", "spec", "coverage", "--spec", dir); code != 0 {
		t.Fatalf("a copy of the built-in spec: exit %d, stderr %s", code, errOut)
	}
	undo := edit("README.md", "\nA server MUST answer. [req: x.answer]\nA client SHOULD wait. [req: x.wait]\n")
	code, out, errOut = kbkit(t, "", "spec", "coverage", "--spec", dir, "--uncovered")
	if code != 1 || !strings.Contains(out, "x.answer MUST README.md:") || !strings.Contains(out, "x.wait SHOULD") ||
		!strings.Contains(errOut, "1 MUST requirement(s) neither tested nor waived") {
		t.Fatalf("untested MUST: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	undoWaiver := edit("waivers.yaml", "  - id: x.answer\n    reason: not observable from the wire\n")
	if code, out, errOut = kbkit(t, "", "spec", "coverage", "--spec", dir); code != 0 || !strings.Contains(out, "waived: not observable from the wire") {
		t.Fatalf("waived MUST: exit %d, stderr:\n%s", code, errOut)
	}
	undoWaiver()
	undo()

	for name, e := range map[string][2]string{
		"untagged MUST":     {"README.md", "\nA server MUST answer.\n"},
		"id tagged twice":   {"window.md", "\nIt MUST be. [req: model.tree]\n"},
		"waiver of unknown": {"waivers.yaml", "  - id: x.nowhere\n    reason: gone\n"},
	} {
		undo := edit(e[0], e[1])
		code, out, errOut = kbkit(t, "", "spec", "coverage", "--spec", dir)
		if code != 2 || out != "" || !strings.Contains(errOut, "kbkit spec coverage: coverage: bad input") {
			t.Errorf("%s: exit %d, stdout %.200q, stderr %s", name, code, out, errOut)
		}
		undo()
	}
	if code, _, _ = kbkit(t, "", "spec", "coverage", "--spec", filepath.Join(dir, "missing")); code != 2 {
		t.Errorf("missing --spec directory: exit %d, want 2", code)
	}
}

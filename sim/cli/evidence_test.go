package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subspace/kbkit/sim"
)

// A checker a seed skipped (no evidence) is a skipped JUnit case, never
// a passed one; the JSON carries each checker's evidence.
func TestJUnitMarksSkippedCheckers(t *testing.T) {
	reports := []sim.SeedReport{{Seed: 3, Checks: []sim.CheckResult{
		{Name: sim.CheckRollback, Passed: true, Skipped: true, Detail: "the server rejected no command", Unit: "rejections"},
		{Name: sim.CheckGapless, Passed: true, Evidence: 4, Unit: "events"},
	}}}
	dir := t.TempDir()
	path := filepath.Join(dir, "r.xml")
	if err := writeSeedJUnit(path, reports, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x := string(b)
	_, rollback, _ := strings.Cut(x, `<testsuite name="conformance.rollback"`)
	rollback, _, _ = strings.Cut(rollback, "</testsuite>")
	if !strings.Contains(rollback, `skipped="1"`) || !strings.Contains(rollback, `<skipped message="rollback had nothing to check">`) {
		t.Errorf("rollback's suite does not mark the seed skipped:\n%s", rollback)
	}
	_, gapless, _ := strings.Cut(x, `<testsuite name="conformance.gapless"`)
	gapless, _, _ = strings.Cut(gapless, "</testsuite>")
	if strings.Contains(gapless, "<skipped") {
		t.Errorf("gapless, with evidence, is marked skipped:\n%s", gapless)
	}
	jp := filepath.Join(dir, "r.json")
	if err := writeSeedJSON(jp, nil, reports); err != nil {
		t.Fatal(err)
	}
	if j, _ := os.ReadFile(jp); !strings.Contains(string(j), `"name":"gapless","passed":true,"evidence":4,"unit":"events"`) {
		t.Errorf("the JSON lacks gapless's evidence:\n%s", j)
	}
}

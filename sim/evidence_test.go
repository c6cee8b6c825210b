package sim

import (
	"strings"
	"testing"
)

// A checker with nothing to check is skipped, never passed; a finding
// fails it whatever its evidence; evidence without a finding passes it.
func TestVerdictNeedsEvidence(t *testing.T) {
	for _, ch := range Checks {
		if ch.Unit == "" || ch.evidence == nil {
			t.Errorf("checker %s has no evidence (Unit %q)", ch.Name, ch.Unit)
		}
		none := verdictOf(ch, nil, 0, "")
		if !none.Skipped || !none.Passed || none.Detail == "" {
			t.Errorf("%s with no evidence and no finding: %+v, want skipped with a reason", ch.Name, none)
		}
		found := verdictOf(ch, []string{"a finding"}, 0, "")
		if found.Passed || found.Skipped {
			t.Errorf("%s with a finding and no evidence: %+v, want failed", ch.Name, found)
		}
		ok := verdictOf(ch, nil, 3, "")
		if !ok.Passed || ok.Skipped || ok.Evidence != 3 || ok.Unit != ch.Unit {
			t.Errorf("%s with 3 %s: %+v, want passed with its evidence", ch.Name, ch.Unit, ok)
		}
	}
	var rollback Checker
	for _, ch := range Checks {
		if ch.Name == CheckRollback {
			rollback = ch
		}
	}
	if r := verdictOf(rollback, nil, 0, ""); !strings.Contains(r.Detail, "rejected no command") {
		t.Errorf("rollback without rejections says %q", r.Detail)
	}
	// Skipped names a checker every seed skipped, not one a seed passed.
	reports := []SeedReport{
		{Checks: []CheckResult{verdictOf(rollback, nil, 0, ""), {Name: CheckGapless, Passed: true, Evidence: 1}}},
		{Checks: []CheckResult{verdictOf(rollback, nil, 0, ""), {Name: CheckGapless, Passed: true, Skipped: true}}},
	}
	if got := Skipped(reports); len(got) != 1 || got[0] != CheckRollback {
		t.Errorf("Skipped = %v, want [rollback]", got)
	}
}

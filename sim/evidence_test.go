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

// The client row of docs/testing-clients.md (one client, faults, no window of the kit's
// own): the kit acts as the other users of the client's page, so over a
// handful of seeds every checker has evidence (the server rejects the
// client's commands, refetches owe outcomes, retries are deduplicated),
// and the correct example client passes every one.
func TestSingleClientRunExercisesEveryChecker(t *testing.T) {
	cl := exampleClient(t)
	evidence := map[string]int{}
	for _, r := range runForeign(t, Options{Clients: []string{cl}, Faults: true, EchoTimeout: hang, ClientTimeout: hang}, 0, 1, 2, 3) {
		if r.Err != "" {
			t.Fatalf("seed %d could not run: %s", r.Seed, r.Err)
		}
		for _, c := range r.Checks {
			evidence[c.Name] += c.Evidence
			if !c.Passed {
				t.Errorf("seed %d: %s failed:\n%s\n%s", r.Seed, c.Name, c.Detail, tail(r.History, 40))
			}
			if c.Skipped && c.Evidence != 0 {
				t.Errorf("seed %d: %s skipped with %d %s", r.Seed, c.Name, c.Evidence, c.Unit)
			}
		}
	}
	for _, name := range Checkers {
		if evidence[name] == 0 {
			t.Errorf("%s had no evidence in 4 single-client seeds", name)
		}
	}
	t.Logf("evidence: %v", evidence)
}

package sim

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/subspace/kbkit/kbcore"
)

// The linearizability model takes a merge-page the planner rejected for
// its derived restore on the target (node-exists) as leaving the page
// unchanged, but still holds every other command to the page reducer: an
// edit-text the reducer accepts cannot be rejected node-exists.
func TestPageModelDerivedRejections(t *testing.T) {
	const page, into = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	m := pageModel(page)
	st := m.Init()
	for i, c := range []kbcore.Command{
		{ID: "p1", Type: kbcore.TypeCreatePage, Payload: mustJSON(map[string]any{"title": "P"})},
		{ID: "n1", Type: kbcore.TypeCreateAfter, Payload: mustJSON(map[string]any{"text": "a"})},
	} {
		var ok bool
		if ok, st = m.Step(st, linInput{cmd: c}, linOutput{seq: int64(i + 1)}); !ok {
			t.Fatalf("%s at seq %d is not accepted", c.Type, i+1)
		}
	}
	for _, tc := range []struct {
		cmd  kbcore.Command
		want bool
	}{
		{kbcore.Command{ID: "m1", Type: kbcore.TypeMergePage, Payload: mustJSON(map[string]any{"into": into})}, true},
		{kbcore.Command{ID: "e1", Type: kbcore.TypeEditText, Payload: mustJSON(map[string]any{"node": "n1", "text": "b"})}, false},
	} {
		ok, after := m.Step(st, linInput{cmd: tc.cmd}, linOutput{rejected: kbcore.CodeNodeExists})
		if ok != tc.want {
			t.Errorf("%s rejected node-exists: model says %v, want %v", tc.cmd.Type, ok, tc.want)
		}
		if ok && !m.Equal(after, st) {
			t.Errorf("%s rejected changed the page", tc.cmd.Type)
		}
	}
}

// TestDocsListTheCheckers holds docs/testing-clients.md's table of checkers to
// Checks: every row, in order, with the line it proves.
func TestDocsListTheCheckers(t *testing.T) {
	b, err := os.ReadFile("../docs/testing-clients.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| checker | what it proves |\n|---|---|\n")
	if !ok {
		t.Fatal("docs/testing-clients.md has no table of checkers")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		rows = append(rows, line)
	}
	var want []string
	for _, c := range Checks {
		want = append(want, "| "+c.Name+" | "+c.Proves+" |")
	}
	if !slices.Equal(rows, want) {
		t.Errorf("docs/testing-clients.md's checkers:\n%s\nChecks:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

package cases_test

import (
	"context"
	"strings"
	"testing"

	"github.com/subspace/kbkit/speckit/cases"
)

// A case whose verdict differs (accepted against rejected) shows the whole
// expected result and the whole result got, not a bare "- accepted".
func TestVerdictMismatchShowsBothResults(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"command expects accepted", `
  - id: m/accept
    given: {doc: {nodes: [{id: a, rank: a0, text: A}]}}
    when: {cmd: {id: c1, type: edit-text, payload: {node: b, text: Wanted}}}
    then:
      doc: {nodes: [{id: a, rank: a0, text: Wanted}]}
      inverse: [{type: edit-text, payload: {node: a, text: A}}]
`, []string{"- accepted:\n-   doc: {", `-         "text": "Wanted"`, "-   inverse: [", "+ rejected: node-not-found (", "\n"}},
		{"command expects rejected", `
  - id: m/reject
    given: {doc: {nodes: [{id: a, rank: a0, text: A}]}}
    when: {cmd: {id: c1, type: edit-text, payload: {node: a, text: Got}}}
    then: {rejected: node-not-found}
`, []string{"- rejected: node-not-found\n+ accepted:\n+   doc: {", `+         "text": "Got"`, "+   inverse: [", `+         "text": "A"`}},
		{"plan expects accepted", `
  - id: m/plan-accept
    given:
      pages: [{page: {id: P, title: Alpha}, nodes: []}, {page: {id: R, title: Beta}, nodes: []}]
    when: {page: P, cmd: {id: c1, type: rename-page, payload: {title: Beta}}}
    then:
      effects: [{page: P, cmd: {type: rename-page, payload: {title: Beta}}}]
`, []string{"- accepted:\n-   effects: [", `-           "title": "Beta"`, "+ rejected: title-taken ("}},
		{"plan expects rejected", `
  - id: m/plan-reject
    given:
      pages: [{page: {id: P, title: Alpha}, nodes: []}]
    when: {page: P, cmd: {id: c1, type: rename-page, payload: {title: Beta}}}
    then: {rejected: title-taken}
`, []string{"- rejected: title-taken\n+ accepted:\n+   effects: [", "+   pages: {", `+         "title": "Beta"`}},
	} {
		c := windowCase(t, tc.body)
		o := cases.Check(context.Background(), cases.Reference{}, c)
		if o.Status != cases.Fail {
			t.Fatalf("%s: status %s, want fail (%s)", tc.name, o.Status, o.Diff)
		}
		for _, w := range tc.want {
			if !strings.Contains(o.Diff, w) {
				t.Errorf("%s: diff lacks %q:\n%s", tc.name, w, o.Diff)
			}
		}
	}
}

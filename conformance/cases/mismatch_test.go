package cases_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/subspace/kbkit/conformance/cases"
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

// DecodeCommand keeps a type that is not a string as its JSON text, and
// reports an id that is not a string; only a cmd that is no object fails.
func TestDecodeCommand(t *testing.T) {
	for _, tc := range []struct {
		in, typ, id string
		idErr, err  bool
	}{
		{`{"id": "c1", "type": "edit-text", "payload": {}}`, "edit-text", "c1", false, false},
		{`{"id": null, "type": null}`, "", "", false, false},
		{`{"type": "delete"}`, "delete", "", false, false},
		{`{"id": "c1", "type": 5}`, "5", "c1", false, false},
		{`{"id": "c1", "type": ["edit-text"]}`, `["edit-text"]`, "c1", false, false},
		{`{"id": 7, "type": "edit-text"}`, "edit-text", "", true, false},
		{`{"id": {}, "type": "edit-text"}`, "edit-text", "", true, false},
		{`[1]`, "", "", false, true},
		{`"cmd"`, "", "", false, true},
	} {
		c, idErr, err := cases.DecodeCommand(json.RawMessage(tc.in))
		if (err != nil) != tc.err || (idErr != "") != tc.idErr {
			t.Errorf("%s: idErr %q, err %v", tc.in, idErr, err)
			continue
		}
		if err == nil && (c.Type != tc.typ || c.ID != tc.id) {
			t.Errorf("%s: type %q id %q, want %q %q", tc.in, c.Type, c.ID, tc.typ, tc.id)
		}
	}
}

package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"path"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/kbcore/rank"
	"github.com/subspace/kbkit/spec"
	"github.com/subspace/kbkit/speckit/cases"
)

// Fixed envelope ids for wrapping case commands.
const (
	envID     = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
	envDevice = "0b5e8f1c-2d3a-4b6c-8d9e-0f1a2b3c4d5e"
	envPage   = "00000000-0000-0000-0000-000000000001"
)

// schemaPassesDespiteRejection lists command cases the reducer rejects with
// invalid-payload or unknown-type although the payload has the type's
// shape: the reason needs more than the payload, so no schema can see it.
var schemaPassesDespiteRejection = map[string]string{
	// restore-page's page must be *this* page's id: any uuid has the
	// right shape, only the reducer knows which page it is applied to.
	"restore-page/other-page-id-invalid-payload":     "payload.page is a well-formed uuid of another page",
	"restore-page/page-id-checked-before-not-merged": "payload.page is a well-formed uuid of another page",
	// A record whose parent is its own id: each field has its shape.
	"restore/record-own-parent-invalid-payload":            "a record's parent is its own id",
	"restore/record-own-parent-checked-before-node-exists": "a record's parent is its own id",
	"restore-page/record-own-parent-invalid-payload":       "a record's parent is its own id",
	"edit-text/command-id-not-a-string-invalid-payload":    "the command id, outside the payload, is not a string",
}

// schemaFailsDespiteOtherVerdict lists command cases whose payload fails
// its schema although the reducer answers something other than
// invalid-payload / unknown-type: a check that comes earlier in the
// reducer's order (page-not-found, page-merged) decides first.
var schemaFailsDespiteOtherVerdict = map[string]string{
	"edit-text/unborn-checked-before-invalid-payload": "page-not-found is checked before the payload (text missing)",
	"edit-text/merged-checked-before-invalid-payload": "page-merged is checked before the payload (unknown field)",
	// restore-page checks not-merged before the records, as restore would.
	"restore-page/not-merged-checked-before-bad-record": "not-merged is checked before the records (a bad rank)",
	// Value checks come at their place in the type's row (spec/README.md 2.1).
	"create-page/page-exists-checked-before-control-character": "page-exists is checked before the title's characters",
	"rename-page/title-empty-checked-before-bad-alias":         "title-empty is checked before the aliases",
}

func specCases(t *testing.T) []cases.Case {
	return cases.ForTest(t)
}

// cmdParts returns a command case's type and raw payload (nil when the
// payload key is absent).
func cmdParts(t *testing.T, c cases.Case) (string, []byte) {
	t.Helper()
	cmd, _ := c.When["cmd"].(map[string]any)
	typ, _ := cmd["type"].(string)
	p, ok := cmd["payload"]
	if !ok {
		return typ, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("%s: payload: %v", c.ID, err)
	}
	return typ, b
}

func TestSchemaFiles(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{EnvelopeSchema, DocumentSchema, NodeSchema, CaseFileSchema, CommonSchema}
	for _, typ := range kbcore.Types {
		want = append(want, PayloadSchema(typ))
	}
	for _, name := range want {
		if _, ok := files[name]; !ok {
			t.Errorf("spec/schema/%s is missing (or not embedded)", name)
		}
	}
	for name, doc := range files {
		m, _ := doc.(map[string]any)
		if m["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema = %v, want draft 2020-12", name, m["$schema"])
		}
		if m["$id"] != BaseURL+name {
			t.Errorf("%s: $id = %v, want %s", name, m["$id"], BaseURL+name)
		}
		for _, k := range []string{"title", "description"} {
			if s, _ := m[k].(string); s == "" {
				t.Errorf("%s: no %s", name, k)
			}
		}
	}
	if _, err := load(); err != nil {
		t.Fatal(err)
	}
}

func TestNoNetworkLoads(t *testing.T) {
	fsys := fstest.MapFS{}
	for _, name := range []string{EnvelopeSchema, DocumentSchema, CaseFileSchema} {
		fsys["schema/"+name] = &fstest.MapFile{Data: []byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "https://example.com/remote.json"}`)}
	}
	_, err := compileAll(fsys)
	if err == nil || !strings.Contains(err.Error(), "not an embedded kbkit schema") {
		t.Fatalf("compiling a schema with a remote $ref: err = %v, want a refusal to load it", err)
	}
}

func TestShippedCaseFilesValidate(t *testing.T) {
	n := 0
	err := fs.WalkDir(spec.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".yaml" {
			return err
		}
		b, err := fs.ReadFile(spec.FS, p)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte("spec_version")) {
			return nil
		}
		n++
		if err := ValidateCaseFile(b); err != nil {
			var se *Error
			if errors.As(err, &se) {
				for _, p2 := range se.Problems {
					t.Errorf("%s: %s", p, p2)
				}
			} else {
				t.Errorf("%s: %v", p, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no case files found in spec.FS")
	}
}

func TestCommandPayloadsAgreeWithReducer(t *testing.T) {
	all := specCases(t)
	ids := map[string]bool{}
	for _, c := range all {
		if c.Suite() == cases.SuiteCommands {
			ids[c.ID] = true
		}
	}
	for _, list := range []map[string]string{schemaPassesDespiteRejection, schemaFailsDespiteOtherVerdict} {
		for id := range list {
			if !ids[id] {
				t.Errorf("exception list names %s, which is not a command case (renamed or removed?)", id)
			}
		}
	}
	for _, c := range all {
		if c.Suite() != cases.SuiteCommands {
			continue
		}
		typ, payload := cmdParts(t, c)
		code, _ := c.Then["rejected"].(string)
		shapeBad := code == kbcore.CodeInvalidPayload || code == kbcore.CodeUnknownType
		wantFail := shapeBad
		if why, ok := schemaPassesDespiteRejection[c.ID]; ok {
			if !shapeBad {
				t.Errorf("%s: listed as rejected for a reason schemas cannot see (%s) but then.rejected is %q", c.ID, why, code)
			}
			wantFail = false
		}
		if why, ok := schemaFailsDespiteOtherVerdict[c.ID]; ok {
			if shapeBad {
				t.Errorf("%s: listed as failing the schema under an earlier check (%s) but then.rejected is %q", c.ID, why, code)
			}
			wantFail = true
		}
		perr := ValidatePayload(typ, payload)
		switch {
		case wantFail && perr == nil:
			t.Errorf("%s: the reducer rejects it with %s but payload %s passes payload/%s.schema.json", c.ID, code, payload, typ)
		case !wantFail && perr != nil:
			verdict := "accepts it"
			if code != "" {
				verdict = "rejects it with " + code
			}
			t.Errorf("%s: the reducer %s but the payload schema fails: %v", c.ID, verdict, perr)
		}
		if perr != nil && !errors.Is(perr, ErrInvalid) {
			t.Errorf("%s: %v is not ErrInvalid", c.ID, perr)
		}

		// The same command on the wire.
		env := map[string]any{"id": envID, "device_id": envDevice, "page_id": envPage, "type": typ}
		if payload != nil {
			env["payload"] = json.RawMessage(payload)
		}
		b, _ := json.Marshal(env)
		eerr := ValidateEnvelope(b)
		if (eerr == nil) != (perr == nil) {
			t.Errorf("%s: envelope verdict %v disagrees with payload verdict %v", c.ID, eerr, perr)
		}
		if perr != nil && eerr != nil {
			// Paths agree: the payload's problems reappear in the envelope's.
			for _, p := range perr.(*Error).Problems {
				if strings.HasPrefix(p, "payload") && !strings.Contains(eerr.Error(), p) {
					t.Errorf("%s: envelope error %q lacks the payload problem %q", c.ID, eerr, p)
				}
			}
		}
	}
}

func TestCaseDocumentsAreCanonicalDocuments(t *testing.T) {
	skipped := 0
	for _, c := range specCases(t) {
		if c.Suite() != cases.SuiteCommands {
			continue
		}
		given, want, cmdJSON, err := cases.CaseDocs(c)
		if err != nil {
			// Not a document kbcore accepts: the kbcore case tests report
			// it; there is no canonical form to check here.
			t.Logf("%s: skipped: %v", c.ID, err)
			skipped++
			continue
		}
		if err := ValidateDocument(given); err != nil {
			t.Errorf("%s: given.doc (canonical) fails document.schema.json: %v", c.ID, err)
		}
		if want != nil {
			if err := ValidateDocument(want); err != nil {
				t.Errorf("%s: then.doc (canonical) fails document.schema.json: %v", c.ID, err)
			}
		}
		// What the reducer itself produces must have the shapes too: the
		// new document, and every inverse command (the window sends
		// inverses as new commands).
		d, err := kbcore.ParseDoc(given)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		cmd, idErr, err := kbcore.ReadCommand(cmdJSON)
		if err != nil {
			t.Errorf("%s: cmd: %v", c.ID, err)
			continue
		}
		if idErr != "" {
			continue // no kbcore.Command has it: the reader answers (spec/ADAPTER.md 3)
		}
		res := kbcore.Apply(d, cmd)
		if res.Rejected != nil {
			continue
		}
		out, _ := res.Doc.MarshalJSON()
		if err := ValidateDocument(out); err != nil {
			t.Errorf("%s: the reducer's document fails document.schema.json: %v", c.ID, err)
		}
		for i, inv := range res.Inverse {
			if err := ValidatePayload(inv.Type, inv.Payload); err != nil {
				t.Errorf("%s: inverse[%d] %s %s fails its payload schema: %v", c.ID, i, inv.Type, inv.Payload, err)
			}
		}
	}
	if skipped > 0 {
		t.Logf("%d case(s) skipped: their documents are not valid kbcore documents", skipped)
	}
}

// mustFail checks that err is a validation failure naming every want.
func mustFail(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: passed, want a failure naming %q", what, want)
		return
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("%s: %v is not ErrInvalid", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not contain %q", what, err, w)
		}
	}
}

func envelope(t *testing.T, mod func(map[string]any)) []byte {
	t.Helper()
	m := map[string]any{"id": envID, "device_id": envDevice, "page_id": envPage,
		"type": "edit-text", "payload": map[string]any{"node": "a", "text": "x"}}
	mod(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEnvelopeNegative(t *testing.T) {
	if err := ValidateEnvelope(envelope(t, func(map[string]any) {})); err != nil {
		t.Fatalf("good envelope: %v", err)
	}
	tests := []struct {
		name string
		mod  func(map[string]any)
		want []string
	}{
		{"unknown field", func(m map[string]any) { m["seq"] = 3 }, []string{"seq: unknown field"}},
		{"non-uuid id", func(m map[string]any) { m["id"] = "c1" }, []string{"id: is not a lower-case hyphenated uuid"}},
		{"upper-case uuid", func(m map[string]any) { m["device_id"] = strings.ToUpper(envDevice) }, []string{"device_id: is not a lower-case hyphenated uuid"}},
		{"missing page_id", func(m map[string]any) { delete(m, "page_id") }, []string{"page_id: missing"}},
		{"missing payload", func(m map[string]any) { delete(m, "payload") }, []string{"payload: missing"}},
		{"payload not an object", func(m map[string]any) { m["payload"] = "a=x" }, []string{"payload: must be an object, got a string"}},
		{"unknown type", func(m map[string]any) { m["type"] = "create-before" }, []string{`type: unknown command type "create-before"`}},
		{"missing payload key", func(m map[string]any) { m["payload"] = map[string]any{"text": "x"} }, []string{"payload.node: missing"}},
		{"wrong payload type", func(m map[string]any) { m["payload"] = map[string]any{"node": "a", "text": 42} }, []string{"payload.text: must be a string, got a number"}},
		{"unknown payload field", func(m map[string]any) {
			m["payload"] = map[string]any{"node": "a", "text": "x", "html": "<b>"}
		}, []string{"payload.html: unknown field"}},
		{"several problems", func(m map[string]any) {
			m["id"] = "nope"
			m["payload"] = map[string]any{}
		}, []string{"id: is not", "payload.node: missing", "payload.text: missing"}},
	}
	for _, tt := range tests {
		mustFail(t, tt.name, ValidateEnvelope(envelope(t, tt.mod)), tt.want...)
	}
	mustFail(t, "not JSON", ValidateEnvelope([]byte(`{"id":`)), "envelope: not valid JSON")
	mustFail(t, "trailing data", ValidateEnvelope(append(envelope(t, func(map[string]any) {}), " {}"...)), "envelope: not valid JSON")
	mustFail(t, "not an object", ValidateEnvelope([]byte(`[]`)), "envelope: must be an object, got an array")
}

func TestPayloadNegative(t *testing.T) {
	tests := []struct {
		typ, payload string
		want         []string // nil = must pass
	}{
		{"create-after", `{"text": "x"}`, nil},
		{"create-after", `{"text": "x", "after": null, "parent": null, "node": null, "kind": null, "rank": null}`, nil},
		{"create-after", `{"text": "x", "rank": "not a key"}`, nil}, // an invalid hint is ignored, not an error
		{"create-after", `{"after": "a"}`, []string{"payload.text: missing"}},
		{"create-after", `{"text": "x", "kind": "image"}`, []string{`payload.kind: "image" is not one of "text", "code", "table", null`}},
		{"create-after", `{"text": "x", "node": "no spaces"}`, []string{"payload.node: is not a node id"}},
		{"create-after", `{"text": "x", "after": ""}`, nil}, // names no node: node-not-found, not a shape error
		{"create-after", `{"text": "x", "node": "` + strings.Repeat("n", 65) + `"}`, []string{"payload.node: is not a node id"}},
		{"move-node", `{"node": "a", "parent": null, "after": null}`, nil},
		{"move-node", `{"node": "a"}`, []string{"payload.after: missing", "payload.parent: missing"}},
		{"move-node", `{"node": "a", "parent": null, "after": "b", "rank": 5}`, []string{"payload.rank: must be a string or null, got a number"}},
		{"edit-text", `{"node": "a", "text": null}`, []string{"payload.text: must be a string, got null"}},
		{"edit-text", `"a=X"`, []string{"payload: must be an object, got a string"}},
		{"edit-text", ``, []string{"payload: missing"}},
		{"delete", `{"node": null}`, []string{"payload.node: must be a string, got null"}},
		{"set-cell", `{"node": "t", "cell": "A1", "value": "1"}`, nil},
		{"set-cell", `{"node": "t", "cell": "ZZZ999999", "value": ""}`, nil},
		{"set-cell", `{"node": "t", "cell": "A01", "value": "1"}`, []string{"payload.cell: is not a cell name"}},
		{"set-cell", `{"node": "t", "cell": "A1234567", "value": "1"}`, []string{"payload.cell: is not a cell name"}},
		{"set-outputs", `{"node": "k", "outputs": [{"mime": "text/plain", "data": "1", "size": 1}]}`, []string{"payload.outputs[0].size: unknown field"}},
		{"set-outputs", `{"node": "k", "outputs": [{"mime": "text/plain"}]}`, []string{"payload.outputs[0].data: missing"}},
		{"restore", `{"nodes": []}`, []string{"payload.nodes: must not be empty"}},
		{"restore", `{"nodes": [{"id": "b", "kind": "text", "parent": null, "rank": "a0", "text": "B"}]}`, nil},
		{"restore", `{"nodes": [{"id": "b", "kind": "text", "parent": null, "rank": "a10", "text": "B"}]}`, []string{"payload.nodes[0].rank: is not a valid rank"}},
		{"restore", `{"nodes": [{"id": "b", "kind": "text", "parent": null, "rank": "A00000000000000000000000000", "text": "B"}]}`, []string{"payload.nodes[0].rank: is not a valid rank"}},
		{"restore", `{"nodes": [{"id": "b", "kind": "text", "parent": null, "rank": "A00000000000000000000000000V", "text": "B"}]}`, nil},
		{"restore", `{"nodes": [{"id": "b", "kind": "text", "parent": null, "rank": "a0", "text": "B", "outputs": [{"mime": "m", "data": "d"}]}]}`, []string{"payload.nodes[0].outputs"}},
		{"restore", `{"nodes": [{"id": "b", "kind": "text", "parent": null, "rank": "a0", "text": "B", "outputs": []}]}`, nil},
		{"restore", `{"nodes": [{"id": "k", "kind": "code", "parent": null, "rank": "a0", "text": "K"}]}`, nil}, // outputs default to []
		{"restore", `{"nodes": [{"id": "t", "kind": "table", "rank": "a0", "text": "T", "cells": {"A1": "1"}}]}`, nil},
		{"restore", `{"nodes": [{"id": "b", "rank": "a0", "text": "B"}]}`, nil}, // kind text, parent null
		{"restore", `{"nodes": [{"id": "b", "rank": "a0"}]}`, []string{"payload.nodes[0].text: missing"}},
		{"restore", `{"nodes": [{"id": "b", "rank": "a0", "text": "B", "cells": {"A1": "1"}}]}`, []string{"payload.nodes[0].cells"}},
		{"restore", `{"nodes": [{"id": "b", "rank": "a0", "text": "B", "cells": {}}]}`, nil},
		{"restore", `{"nodes": [{"id": "k", "kind": "code", "rank": "a0", "text": "K", "outputs": [{"data": "1"}]}]}`, []string{"payload.nodes[0].outputs[0].mime: missing"}},
		{"restore", `{"nodes": [{"id": "t", "kind": "table", "parent": null, "rank": "a0", "text": "T", "cells": {"a1": "1"}}]}`, []string{`payload.nodes[0].cells: key "a1" is not a cell name`}},
		{"create-page", `{"title": "Budget", "dir": null}`, nil},
		{"create-page", `{"title": "  "}`, nil},       // title-empty is the reducer's
		{"create-page", `{"title": "Budget\n"}`, nil}, // trimmed before the control check
		{"create-page", `{"title": "Budget\t2025"}`, []string{"payload.title: contains a control character"}},
		{"create-page", `{"title": "Bud\u0000get"}`, []string{"payload.title: contains a control character"}},
		{"create-page", `{"title": "Budget", "aliases": []}`, []string{"payload.aliases: unknown field"}},
		{"set-aliases", `{"aliases": ["Plan", " Budget\u3000"]}`, nil},
		{"set-aliases", `{"aliases": ["\u00a0\t"]}`, []string{"payload.aliases[0]: is empty or contains a control character"}},
		{"set-aliases", `{"aliases": ["Plan\u007fB"]}`, []string{"payload.aliases[0]: is empty or contains a control character"}},
		{"rename-page", `{"title": "Plan", "aliases": null}`, nil},
		{"rename-page", `{"title": "Plan", "aliases": [""]}`, []string{"payload.aliases[0]: is empty"}},
		{"merge-page", `{"into": "00000000-0000-0000-0000-000000000002"}`, nil},
		{"merge-page", `{"into": "p2"}`, []string{"payload.into: is not a lower-case hyphenated uuid"}},
		{"restore-page", `{"page": "00000000-0000-0000-0000-000000000001", "nodes": []}`, nil},
		{"restore-page", `{"page": {"title": "Budget"}, "nodes": []}`, []string{"payload.page: must be a string, got an object"}},
		{"nonsense", `{}`, []string{`type: unknown command type "nonsense"`}},
		// Length limits (spec/PROTOCOL.md section 8), counted in characters.
		{"create-page", `{"title": "` + strings.Repeat("é", 1000) + `", "dir": "` + strings.Repeat("d", 1000) + `"}`, nil},
		{"create-page", `{"title": "` + strings.Repeat("é", 1001) + `"}`, []string{"payload.title: is longer than 1000 characters"}},
		{"create-page", `{"title": "B", "dir": "` + strings.Repeat("d", 1001) + `"}`, []string{"payload.dir: is longer than 1000 characters"}},
		{"rename-page", `{"title": "` + strings.Repeat("x", 1001) + `"}`, []string{"payload.title: is longer than 1000 characters"}},
		{"set-aliases", `{"aliases": ["` + strings.Repeat("a", 1001) + `"]}`, []string{"payload.aliases[0]: is longer than 1000 characters"}},
		{"set-aliases", `{"aliases": [` + strings.Repeat(`"a",`, 100) + `"a"]}`, []string{"payload.aliases: has more than 100 items"}},
	}
	for _, tt := range tests {
		err := ValidatePayload(tt.typ, []byte(tt.payload))
		name := tt.typ + " " + tt.payload
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want pass", name, err)
			}
			continue
		}
		mustFail(t, name, err, tt.want...)
	}
}

func TestDocumentNegative(t *testing.T) {
	good := `{"nodes": [
	  {"id": "n1", "kind": "text", "parent": null, "rank": "a0", "text": "cash"},
	  {"id": "n2", "kind": "code", "outputs": [{"data": "1", "mime": "text/plain"}], "parent": "n1", "rank": "a0", "text": "print(1)"},
	  {"cells": {"A1": "10", "B1": "=A1*2"}, "id": "n3", "kind": "table", "parent": null, "rank": "a1", "text": ""}],
	 "page": {"aliases": ["Old budget"], "dir": "", "id": "9c2e0a4b-1f3d-4e5a-8b6c-7d8e9f0a1b2c", "merged_into": null, "title": "Budget"}}`
	if err := ValidateDocument([]byte(good)); err != nil {
		t.Fatalf("good document: %v", err)
	}
	tests := []struct {
		doc  string
		want []string
	}{
		{`{"nodes": []}`, []string{"page: missing"}},
		{`{"nodes": [], "page": {"aliases": [], "dir": "", "id": "p1", "merged_into": null, "title": "T"}}`, []string{"page.id: is not a lower-case hyphenated uuid"}},
		{`{"nodes": [], "page": {"aliases": [], "dir": "", "id": "` + envPage + `", "merged_into": "x", "title": "T"}}`, []string{"page.merged_into: is not a lower-case hyphenated uuid or null"}},
		{`{"nodes": [], "page": {"aliases": [], "id": "` + envPage + `", "merged_into": null, "title": "T", "color": 1}}`, []string{"page.dir: missing", "page.color: unknown field"}},
		{`{"nodes": [{"id": "a", "parent": null, "rank": "a0", "text": ""}], "page": {"aliases": [], "dir": "", "id": "` + envPage + `", "merged_into": null, "title": "T"}}`, []string{"nodes[0].kind: missing"}},
		{`{"nodes": [{"id": "a", "kind": "table", "parent": null, "rank": "a0", "text": ""}], "page": {"aliases": [], "dir": "", "id": "` + envPage + `", "merged_into": null, "title": "T"}}`, []string{"nodes[0].cells: missing"}},
		{`{"nodes": [{"id": "a", "kind": "text", "parent": null, "rank": "a0", "text": "", "cells": {}}], "page": {"aliases": [], "dir": "", "id": "` + envPage + `", "merged_into": null, "title": "T"}}`, []string{"nodes[0].cells: not allowed here"}},
		{`{"nodes": [{"id": "a", "kind": "code", "parent": "", "rank": "a0", "text": "", "outputs": [], "cells": {}}], "page": {"aliases": [], "dir": "", "id": "` + envPage + `", "merged_into": null, "title": "T"}}`, []string{"nodes[0].cells: not allowed here", "nodes[0].parent: is not a node id"}},
	}
	for _, tt := range tests {
		mustFail(t, tt.doc, ValidateDocument([]byte(tt.doc)), tt.want...)
	}
}

func TestCaseFileNegative(t *testing.T) {
	good := `spec_version: 1
cases:
  - id: x/ok
    description: fine
    given: {doc: {nodes: [{id: a, rank: a0, text: A}]}}
    when: {cmd: {id: c1, type: delete, payload: {node: a}}}
    then:
      doc: {nodes: []}
      inverse: [{type: restore, payload: {nodes: [{id: a, kind: text, parent: null, rank: a0, text: A}]}}]
  - id: x/tok
    description: tokenizer
    when: {text: "[[A]]"}
    then: {refs: [{kind: link, title: A}], label: null}
  - id: x/win
    description: window
    given: {doc: {nodes: []}, seq: 3}
    steps:
      - event: {echo: {seq: 5, cmd: {id: x, type: edit-text, payload: {node: a, text: hi}}}}
        expect: {seq: 3, pending: [], actions: [refetch]}
      - event: {snapshot: {doc: {nodes: []}, seq: 5, outcomes: {x: {seq: 4}, y: {rejected: {code: node-not-found, message: gone}}}}}
        expect: {seq: 5, rendered: {nodes: []}, actions: ["toast:node-not-found", "send:z"]}
  - id: x/planner
    description: a planner case, loosely checked
    given: {pages: []}
    when: {plan: {title: X}}
    then: {anything: [1, 2]}
`
	if err := ValidateCaseFile([]byte(good)); err != nil {
		t.Fatalf("good case file: %v", err)
	}
	tests := []struct {
		name, old, new string
		want           []string
	}{
		{"spec_version", "spec_version: 1", "spec_version: 3", []string{"spec_version: 3 is not one of 1, 2"}},
		{"no description", "    description: fine\n", "", []string{"cases[0].description: missing (case x/ok)"}},
		{"doc and rejected", "      doc: {nodes: []}\n", "      doc: {nodes: []}\n      rejected: node-not-found\n",
			[]string{"cases[0].then.doc: not allowed here (case x/ok)", "cases[0].then.inverse: not allowed here"}},
		{"neither doc nor rejected", "      doc: {nodes: []}\n", "", []string{"cases[0].then.doc: missing (case x/ok)"}},
		{"bad rejection code", "      doc: {nodes: []}\n      inverse: [{type: restore, payload: {nodes: [{id: a, kind: text, parent: null, rank: a0, text: A}]}}]\n",
			"      rejected: nope\n", []string{`cases[0].then.rejected: unknown rejection code "nope"`}},
		{"inverse payload shape", "parent: null, rank: a0, text: A}]}}]", "parent: null, rank: a0}]}}]", []string{"cases[0].then.inverse[0].payload.nodes[0].text: missing (case x/ok)"}},
		{"inverse type", "inverse: [{type: restore,", "inverse: [{type: unrestore,", []string{`cases[0].then.inverse[0].type: unknown command type "unrestore"`}},
		{"window seq", "seq: 5, cmd:", "seq: 0, cmd:", []string{"cases[2].steps[0].event.echo.seq: must be at least 1"}},
		{"planner shape wins over cmd", "given: {pages: []}\n    when: {plan: {title: X}}", "given: {pages: []}\n    when: {cmd: 1}", nil},
		{"case node field", "{id: a, rank: a0, text: A}]}}", "{id: a, rank: a0, txt: A}]}}", []string{"cases[0].given.doc.nodes[0].txt: unknown field"}},
		{"case node outputs on text", "{id: a, rank: a0, text: A}]}}", "{id: a, rank: a0, text: A, outputs: []}]}}", []string{"cases[0].given.doc.nodes[0].outputs: not allowed here"}},
		{"case node bad rank", "{id: a, rank: a0, text: A}]}}", "{id: a, rank: a00, text: A}]}}", []string{"cases[0].given.doc.nodes[0].rank: is not a valid rank"}},
		{"tokenizer both", `when: {text: "[[A]]"}`, `when: {text: "[[A]]", formula: "=A1"}`, []string{"cases[1].when: must have exactly one key, got 2 (case x/tok)"}},
		{"tokenizer ref kind", "kind: link, title: A", "kind: url, title: A", []string{`cases[1].then.refs[0].kind: "url" is not one of "link", "tag", "embed"`}},
		{"window two events", "event: {echo:", "event: {undo: {ids: [u1]}, echo:", []string{"cases[2].steps[0].event: must have exactly one key, got 2 (case x/win)"}},
		{"window action", "actions: [refetch]", "actions: [reload]", []string{`cases[2].steps[0].expect.actions[0]: "reload" does not match`}},
		{"window outcome", "x: {seq: 4}", "x: {seq: 4, rejected: {code: c}}", []string{"cases[2].steps[1].event.snapshot.outcomes.x: must have exactly one key"}},
		{"planner typo", "then: {anything: [1, 2]}", "thne: {anything: [1, 2]}", []string{"cases[3].thne: unknown field", "cases[3].then: missing"}},
		{"non-string key", "given: {pages: []}", "given: {1: []}", nil}, // YAML int keys are read as strings
	}
	for _, tt := range tests {
		src := strings.Replace(good, tt.old, tt.new, 1)
		if src == good {
			t.Fatalf("%s: replacement %q not found", tt.name, tt.old)
		}
		err := ValidateCaseFile([]byte(src))
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want pass", tt.name, err)
			}
			continue
		}
		mustFail(t, tt.name, err, tt.want...)
	}
	mustFail(t, "bad yaml", ValidateCaseFile([]byte("cases: [")), "case file: not valid YAML")
}

// TestErrorsAreSortedAndDeduplicated pins the error format the server
// returns as a 400 message.
func TestErrorsAreSortedAndDeduplicated(t *testing.T) {
	err := ValidatePayload("move-node", []byte(`{"rank": 1, "zzz": true}`))
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *Error", err)
	}
	want := []string{
		"payload.after: missing",
		"payload.node: missing",
		"payload.parent: missing",
		"payload.rank: must be a string or null, got a number",
		"payload.zzz: unknown field",
	}
	got := append([]string(nil), se.Problems...)
	if !sort.StringsAreSorted(got) || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if se.Error() != strings.Join(want, "; ") {
		t.Errorf("Error() = %q", se.Error())
	}
}

// TestPatternsAgreeWithKbcore compares the schemas' string rules with
// kbcore's checks on random and edge-case strings: node ids, cell names,
// ranks, titles and aliases.
func TestPatternsAgreeWithKbcore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	pick := func(alphabet []rune, n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	agree := func(what, s string, kbOK bool, err error) {
		t.Helper()
		if kbOK != (err == nil) {
			t.Errorf("%s %q: kbcore says valid=%v, schema says %v", what, s, kbOK, err)
		}
	}

	idChars := []rune("abcXYZ019_- .$é")
	for _, s := range []string{"", "a", strings.Repeat("a", 64), strings.Repeat("a", 65), "a b", "é"} {
		agree("node id", s, kbcore.ValidID(s), ValidatePayload("create-after", mustJSON(map[string]any{"node": s, "text": ""})))
	}
	for range 500 {
		s := pick(idChars, rng.IntN(6))
		agree("node id", s, kbcore.ValidID(s), ValidatePayload("create-after", mustJSON(map[string]any{"node": s, "text": ""})))
	}

	cellChars := []rune("ABZaz0019 $")
	for _, s := range []string{"A1", "ZZZ999999", "ZZZ9999999", "A0", "A01", "ABCD1", "a1", "1A", "A"} {
		agree("cell", s, kbcore.ValidCell(s), ValidatePayload("set-cell", mustJSON(map[string]any{"node": "t", "cell": s, "value": "1"})))
	}
	for range 2000 {
		s := pick(cellChars, 1+rng.IntN(9))
		agree("cell", s, kbcore.ValidCell(s), ValidatePayload("set-cell", mustJSON(map[string]any{"node": "t", "cell": s, "value": "1"})))
	}

	rankOf := func(s string) error {
		return ValidatePayload("restore", mustJSON(map[string]any{"nodes": []any{map[string]any{"id": "a", "rank": s, "text": ""}}}))
	}
	smallest := "A" + strings.Repeat("0", 26)
	for _, s := range []string{"a0", "a0V", "Zz", "a00", "a", "b0", "b00", "z" + strings.Repeat("z", 26), smallest, smallest + "V", smallest + "0", "a0-", ""} {
		agree("rank", s, rank.Valid(s), rankOf(s))
	}
	rankChars := []rune(digits + "-_ ")
	for range 3000 {
		head := rune(digits[10+rng.IntN(52)])
		s := string(head) + pick(rankChars[:62], rng.IntN(30))
		if rng.IntN(10) == 0 {
			s += pick(rankChars, 1)
		}
		agree("rank", s, rank.Valid(s), rankOf(s))
	}

	unborn, err := kbcore.NewDoc(kbcore.Page{ID: envPage}, nil)
	if err != nil {
		t.Fatal(err)
	}
	born, err := kbcore.NewDoc(kbcore.Page{ID: envPage, Title: "T"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	textChars := []rune("aZ é\u0301\t\n\v\f\r\x00\x1b\x1f\x7f\u0085\u00a0\u1680\u2000\u2001\u200a\u200b\u2028\u202f\u3000\ufeff")
	for i := range 4000 {
		s := pick(textChars, rng.IntN(6))
		if i < len(textChars) {
			s = string(textChars[i])
		}
		payload := mustJSON(map[string]any{"title": s})
		res := kbcore.Apply(unborn, kbcore.Command{ID: "c1", Type: "create-page", Payload: payload})
		kbOK := res.Rejected == nil || res.Rejected.Code != kbcore.CodeInvalidPayload
		agree("title", s, kbOK, ValidatePayload("create-page", payload))

		payload = mustJSON(map[string]any{"aliases": []string{s}})
		res = kbcore.Apply(born, kbcore.Command{ID: "c1", Type: "set-aliases", Payload: payload})
		kbOK = res.Rejected == nil || res.Rejected.Code != kbcore.CodeInvalidPayload
		agree("alias", s, kbOK, ValidatePayload("set-aliases", payload))
	}
}

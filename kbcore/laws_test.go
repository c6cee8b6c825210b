package kbcore_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// commandCases returns every reducer case of the built-in spec as a parsed
// document and command.
func commandCases(t testing.TB) []specCase {
	t.Helper()
	all := cases.ForTest(t)
	var out []specCase
	for _, c := range all {
		if c.Suite() != cases.SuiteCommands {
			continue
		}
		given, _, cmdJSON, err := cases.CaseDocs(c)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		d, err := kbcore.ParseDoc(given)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		cmd, idErr, err := kbcore.ReadCommand(cmdJSON)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if idErr != "" {
			continue // a command id that is not a string: no kbcore.Command has one
		}
		out = append(out, specCase{id: c.ID, doc: d, cmd: cmd, docJSON: given, cmdJSON: cmdJSON})
	}
	return out
}

type specCase struct {
	id      string
	doc     kbcore.Doc
	cmd     kbcore.Command
	docJSON []byte
	cmdJSON []byte
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// checkLaws checks purity, the well-formed tree, changed ids and the
// inverse round trip of one application.
func checkLaws(d kbcore.Doc, c kbcore.Command) (kbcore.Result, error) {
	before := mustJSON(d)
	res := kbcore.Apply(d, c)
	again := kbcore.Apply(d, c)
	if mustJSON(d) != before {
		return res, fmt.Errorf("purity: the input document was modified")
	}
	if mustJSON(res) != mustJSON(again) {
		return res, fmt.Errorf("purity: two applications differ:\n%s\n%s", mustJSON(res), mustJSON(again))
	}
	if res.Rejected != nil {
		if !res.Doc.Equal(d) {
			return res, fmt.Errorf("rejection %s changed the document", res.Rejected.Code)
		}
		if len(res.Inverse) != 0 || len(res.Changed) != 0 {
			return res, fmt.Errorf("rejection %s has inverse or changed ids", res.Rejected.Code)
		}
		return res, nil
	}
	if err := res.Doc.Check(); err != nil {
		return res, fmt.Errorf("well-formed tree: %w", err)
	}
	changed := map[string]bool{}
	for i, id := range res.Changed {
		if i > 0 && res.Changed[i-1] >= id {
			return res, fmt.Errorf("Changed %v is not sorted with each id once", res.Changed)
		}
		changed[id] = true
	}
	for _, n := range append(d.Nodes(), res.Doc.Nodes()...) {
		a, okA := d.Node(n.ID)
		b, okB := res.Doc.Node(n.ID)
		if (okA != okB || mustJSON(a) != mustJSON(b)) && !changed[n.ID] {
			return res, fmt.Errorf("node %q changed but is not in Changed %v", n.ID, res.Changed)
		}
	}
	if !res.PageChanged && mustJSON(d.Page()) != mustJSON(res.Doc.Page()) {
		return res, fmt.Errorf("page record changed but PageChanged is false")
	}
	if c.Type == kbcore.TypeCreatePage {
		return res, nil // pages are never deleted: create-page has no inverse
	}
	back := res.Doc
	for i, inv := range res.Inverse {
		r := kbcore.Apply(back, inv)
		if r.Rejected != nil {
			return res, fmt.Errorf("inverse[%d] %s rejected: %s %s", i, inv.Type, r.Rejected.Code, r.Rejected.Message)
		}
		back = r.Doc
	}
	if !back.Equal(d) {
		return res, fmt.Errorf("inverse round trip:\nwant %s\ngot  %s", mustJSON(d), mustJSON(back))
	}
	if mustJSON(back.Index()) != mustJSON(d.Index()) {
		return res, fmt.Errorf("inverse round trip: index differs")
	}
	return res, nil
}

func TestSpecCasesObeyLaws(t *testing.T) {
	all := commandCases(t)
	if len(all) == 0 {
		t.Fatal("no command cases in the built-in spec")
	}
	for _, sc := range all {
		if _, err := checkLaws(sc.doc, sc.cmd); err != nil {
			t.Errorf("%s: %v", sc.id, err)
		}
	}
}

// ---- random command sequences ----

var rankHints = []string{"a0", "a0V", "a1", "Zz", "a5", "b10", "a00", "!", ""}

func drawID(t *rapid.T, ids []string, label string) string {
	if len(ids) > 0 && rapid.IntRange(0, 9).Draw(t, label+"-known") < 8 {
		return rapid.SampledFrom(ids).Draw(t, label)
	}
	return rapid.SampledFrom([]string{"ghost", "n0", "x-1", "bad id", ""}).Draw(t, label)
}

func drawNullableID(t *rapid.T, ids []string, label string) any {
	if rapid.IntRange(0, 3).Draw(t, label+"-null") == 0 {
		return nil
	}
	return drawID(t, ids, label)
}

// drawCommand draws a command of any type, applicable or not: a type of
// the registry (its payload drawn by lawPayloads) or one it lacks.
func drawCommand(t *rapid.T, d kbcore.Doc, step int) kbcore.Command {
	var ids []string
	for _, n := range d.Nodes() {
		ids = append(ids, n.ID)
	}
	types := append([]string{kbcore.TypeCreateAfter, kbcore.TypeCreateAfter, kbcore.TypeCreateAfter, unknownType}, kbcore.Types...)
	typ := rapid.SampledFrom(types).Draw(t, "type")
	id := fmt.Sprintf("c%d", step)
	if typ == kbcore.TypeMergePage && rapid.IntRange(0, 4).Draw(t, "merge?") != 0 {
		// Mostly not a merge: a merged page's later commands are all
		// rejected.
		return kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"ghost","text":""}`)}
	}
	p := map[string]any{}
	if draw := lawPayloads[typ]; draw != nil {
		p = draw(t, ids)
	}
	if rapid.IntRange(0, 30).Draw(t, "junk?") == 0 {
		p["junk"] = 1 // an unknown field: invalid-payload
	}
	b, _ := json.Marshal(p)
	return kbcore.Command{ID: id, Type: typ, Payload: b}
}

// unknownType is a type the registry lacks: drawCommand sends it with an
// empty payload.
const unknownType = "no-such-type"

// lawPayloads draws, for each type of the registry, a payload against a
// document's node ids, applicable or not. TestLawPayloadPerType holds it
// to the registry: without a draw, the laws would only ever see the
// type's empty payload.
var lawPayloads = map[string]func(t *rapid.T, ids []string) map[string]any{
	kbcore.TypeCreateAfter: func(t *rapid.T, ids []string) map[string]any {
		p := map[string]any{}
		if rapid.Bool().Draw(t, "after?") {
			p["after"] = drawNullableID(t, ids, "after")
		} else {
			p["parent"] = drawNullableID(t, ids, "parent")
		}
		p["text"] = rapid.SampledFrom([]string{"", "hello", "see [[Other]]", "cash: $1,200", "#tag x"}).Draw(t, "text")
		p["kind"] = rapid.SampledFrom([]string{"text", "text", "code", "table", "bogus"}).Draw(t, "kind")
		return drawHint(t, p)
	},
	kbcore.TypeEditText: func(t *rapid.T, ids []string) map[string]any {
		return map[string]any{"node": drawID(t, ids, "node"), "text": rapid.String().Draw(t, "text")}
	},
	kbcore.TypeMoveNode: func(t *rapid.T, ids []string) map[string]any {
		p := map[string]any{"node": drawID(t, ids, "node")}
		p["parent"] = drawNullableID(t, ids, "parent")
		p["after"] = drawNullableID(t, ids, "after")
		return drawHint(t, p)
	},
	kbcore.TypeIndent:  drawNode,
	kbcore.TypeOutdent: drawNode,
	kbcore.TypeDelete:  drawNode,
	kbcore.TypeRestore: func(t *rapid.T, ids []string) map[string]any {
		return map[string]any{"nodes": []any{map[string]any{"id": drawID(t, ids, "rid"), "parent": drawNullableID(t, ids, "rparent"),
			"rank": rapid.SampledFrom(rankHints).Draw(t, "rrank"), "kind": "text", "text": "r"}}}
	},
	kbcore.TypeSetOutputs: func(t *rapid.T, ids []string) map[string]any {
		p := drawNode(t, ids)
		p["outputs"] = []any{map[string]any{"mime": "text/plain", "data": rapid.String().Draw(t, "data")}}
		return p
	},
	kbcore.TypeSetCell: func(t *rapid.T, ids []string) map[string]any {
		p := drawNode(t, ids)
		p["cell"] = rapid.SampledFrom([]string{"A1", "B1", "C2", "a1", "A0"}).Draw(t, "cell")
		p["value"] = rapid.SampledFrom([]string{"", "1", "=A1+1", "=B1", "=C2*[[P]]:cash", "=A1"}).Draw(t, "value")
		return p
	},
	kbcore.TypeCreatePage: func(t *rapid.T, _ []string) map[string]any {
		return map[string]any{"title": rapid.SampledFrom([]string{"P", "", " Q "}).Draw(t, "title")}
	},
	kbcore.TypeSetAliases: func(t *rapid.T, _ []string) map[string]any {
		return map[string]any{"aliases": rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", " a", "Cafe\u0301", ""}), 0, 3).Draw(t, "aliases")}
	},
	kbcore.TypeRenamePage: func(t *rapid.T, _ []string) map[string]any {
		return map[string]any{"title": rapid.SampledFrom([]string{"R", "P", "a", "", "S"}).Draw(t, "title")}
	},
	kbcore.TypeMergePage: func(t *rapid.T, _ []string) map[string]any {
		return map[string]any{"into": rapid.SampledFrom([]string{"other-page", "00000000-0000-0000-0000-000000000001"}).Draw(t, "into")}
	},
	kbcore.TypeRestorePage: func(t *rapid.T, _ []string) map[string]any {
		return map[string]any{"page": rapid.SampledFrom([]string{"00000000-0000-0000-0000-000000000001", "other"}).Draw(t, "page"), "nodes": []any{}}
	},
}

// drawNode is a payload {node} of a drawn node id.
func drawNode(t *rapid.T, ids []string) map[string]any {
	return map[string]any{"node": drawID(t, ids, "node")}
}

// drawHint adds a rank hint to p half the time.
func drawHint(t *rapid.T, p map[string]any) map[string]any {
	if rapid.Bool().Draw(t, "hint?") {
		p["rank"] = rapid.SampledFrom(rankHints).Draw(t, "rank")
	}
	return p
}

// TestLawPayloadPerType holds lawPayloads to the command registry: every
// type has a payload draw (without one, the laws and the window's tests
// would only see the type's empty payload, always invalid), and no draw
// is for a type the registry lacks.
func TestLawPayloadPerType(t *testing.T) {
	for _, gap := range kbcore.RegistryGaps(lawPayloads, "payload draw (kbcore/laws_test.go lawPayloads)") {
		t.Error(gap)
	}
	if _, ok := kbcore.Lookup(unknownType); ok {
		t.Errorf("%s is a registered type: drawCommand's unknown type must not be", unknownType)
	}
}

func bornPage() kbcore.Doc {
	d, err := kbcore.NewDoc(kbcore.Page{ID: "00000000-0000-0000-0000-000000000001", Title: "P"}, nil)
	if err != nil {
		panic(err)
	}
	return d
}

func TestRapidCommandSequences(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := bornPage()
		var undos [][]kbcore.Command
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			c := drawCommand(t, d, i)
			res, err := checkLaws(d, c)
			if err != nil {
				t.Fatalf("step %d %s %s: %v", i, c.Type, c.Payload, err)
			}
			if res.Rejected == nil {
				undos = append(undos, res.Inverse)
				d = res.Doc
			}
		}
		// Undo everything, last first, remembering how to redo each step.
		final := d
		redos := make([][]kbcore.Command, len(undos))
		for i := len(undos) - 1; i >= 0; i-- {
			var applied [][]kbcore.Command
			for _, inv := range undos[i] {
				r := kbcore.Apply(d, inv)
				if r.Rejected != nil {
					t.Fatalf("undo of step %d: %s rejected: %s", i, inv.Type, r.Rejected.Message)
				}
				applied = append(applied, r.Inverse)
				d = r.Doc
			}
			for j := len(applied) - 1; j >= 0; j-- {
				redos[i] = append(redos[i], applied[j]...)
			}
		}
		if !d.Equal(bornPage()) {
			t.Fatalf("undo all did not return to the start: %s", mustJSON(d))
		}
		for i := range redos {
			for _, c := range redos[i] {
				r := kbcore.Apply(d, c)
				if r.Rejected != nil {
					t.Fatalf("redo of step %d: %s rejected: %s", i, c.Type, r.Rejected.Message)
				}
				d = r.Doc
			}
		}
		if !d.Equal(final) {
			t.Fatalf("undo then redo differs:\nwant %s\ngot  %s", mustJSON(final), mustJSON(d))
		}
	})
}

package kbcore_test

import (
	"encoding/json"
	"testing"

	"github.com/subspace/kbkit/internal/benchdoc"
	"github.com/subspace/kbkit/kbcore"
)

// TestParsedValueIsTaken: a command's Parsed.Value stands in for its
// payload's bytes (the server's one parse), and a value of another type
// than the command's payload is not taken.
func TestParsedValueIsTaken(t *testing.T) {
	d, err := benchdoc.Page(100)
	if err != nil {
		t.Fatal(err)
	}
	node, read, parsed := "g0k10", "as the bytes say", "as the parse says"
	c := kbcore.Command{ID: "c1", Type: kbcore.TypeEditText,
		Payload: json.RawMessage(`{"node":"` + node + `","text":"` + read + `"}`)}
	text := func(c kbcore.Command) string {
		t.Helper()
		res := kbcore.Apply(d, c)
		if res.Rejected != nil {
			t.Fatalf("rejected: %v", res.Rejected)
		}
		n, ok := res.Doc.Node(node)
		if !ok {
			t.Fatalf("node %s is gone", node)
		}
		return n.Text
	}
	if got := text(c); got != read {
		t.Fatalf("without Parsed: %q", got)
	}
	c.Parsed = kbcore.Parsed{Value: &kbcore.EditText{Node: &node, Text: &parsed}}
	if got := text(c); got != parsed {
		t.Fatalf("with Parsed: %q, want the parsed value %q", got, parsed)
	}
	c.Parsed = kbcore.Parsed{Value: &kbcore.NodeRef{Node: &node}}
	if got := text(c); got != read {
		t.Fatalf("with a Parsed value of another type: %q, want the bytes' %q", got, read)
	}
}

// TestNewFlat: the flat payloads are built field by field, the others
// are not flat.
func TestNewFlat(t *testing.T) {
	v, ok := kbcore.NewFlat(kbcore.TypeMoveNode)
	if !ok {
		t.Fatal("move-node is flat")
	}
	n := "a"
	if !kbcore.SetFlat(v, "node", &n) || !kbcore.SetFlat(v, "parent", nil) || kbcore.SetFlat(v, "text", &n) {
		t.Fatal("SetFlat: move-node has node and parent, no text")
	}
	mv := v.(*kbcore.MoveNode)
	if *mv.Node != "a" || !mv.Parent.Set || mv.Parent.ID != nil || mv.After.Set {
		t.Fatalf("got %+v", mv)
	}
	for _, typ := range []string{kbcore.TypeRestore, kbcore.TypeRenamePage, "no-such-type"} {
		if _, ok := kbcore.NewFlat(typ); ok {
			t.Errorf("%s: called flat", typ)
		}
	}
}

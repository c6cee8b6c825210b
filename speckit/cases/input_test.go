package cases

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/subspace/kbkit/spec"
)

// Every spec case has an input, of the adapter message type of its suite,
// and a failing case's outcome carries it.
func TestInputOfEverySpecCase(t *testing.T) {
	files, err := LoadFS(spec.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	all, err := All(files)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{SuiteCommands: "apply", SuiteTokenizer: "tokenize", SuiteWindow: "window", SuitePlanner: "plan", SuiteCanonical: "canonical"}
	seen := map[string]int{}
	for _, c := range all {
		in, err := Input(c)
		if err != nil {
			t.Errorf("%s: %v", c.ID, err)
			continue
		}
		if in["type"] != types[c.Suite()] {
			t.Errorf("%s: input type %v, want %s", c.ID, in["type"], types[c.Suite()])
		}
		if _, err := json.Marshal(in); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
		seen[c.Suite()]++
	}
	for s := range types {
		if seen[s] == 0 {
			t.Errorf("no %s case", s)
		}
	}
}

type wrongText struct{ Reference }

func (wrongText) Tokenize(_ context.Context, _ TokenizeRequest) (TokenizeReply, error) {
	return TokenizeReply{Refs: json.RawMessage(`[{"kind":"tag","title":"nope"}]`), Label: json.RawMessage("null"), Deps: json.RawMessage("[]")}, nil
}

func TestFailingOutcomeCarriesInput(t *testing.T) {
	c := Case{ID: "x/y", When: map[string]any{"text": "see [[B]]"}, Then: map[string]any{"refs": []any{map[string]any{"kind": "link", "title": "B"}}}}
	o := Check(context.Background(), wrongText{}, c)
	if o.Status != Fail {
		t.Fatalf("status %s, want fail: %s", o.Status, o.Diff)
	}
	if o.Input["type"] != "tokenize" || o.Input["text"] != "see [[B]]" {
		t.Errorf("input %v", o.Input)
	}
	if p := Check(context.Background(), Reference{}, c); p.Status != Pass || p.Input != nil {
		t.Errorf("a passing case: %s, input %v", p.Status, p.Input)
	}
}

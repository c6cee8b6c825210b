package cases_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/subspace/kbkit/speckit/cases"
)

func windowCases(t *testing.T) []cases.Case {
	t.Helper()
	all := cases.ForTest(t)
	var out []cases.Case
	for _, c := range all {
		if c.Suite() == cases.SuiteWindow {
			out = append(out, c)
		}
	}
	return out
}

func TestWindowSpecCasesPass(t *testing.T) {
	all := windowCases(t)
	if len(all) < 45 {
		t.Fatalf("%d window cases in the built-in spec, want at least 45", len(all))
	}
	for _, c := range all {
		if !strings.HasPrefix(c.ID, "window/") {
			t.Errorf("%s: window case ids start with window/", c.ID)
		}
		if o := cases.Check(context.Background(), cases.Reference{}, c); o.Status != cases.Pass {
			t.Errorf("%s (%s:%d): %s\n%s", c.ID, c.File, c.Line, o.Status, o.Diff)
		}
	}
}

// windowCase builds a one-file window case from YAML steps.
func windowCase(t *testing.T, body string) cases.Case {
	t.Helper()
	f, err := cases.Parse("test.yaml", []byte("spec_version: 1\ncases:\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) != 1 {
		t.Fatalf("%d cases", len(f.Cases))
	}
	return f.Cases[0]
}

func TestWindowSuiteFromSteps(t *testing.T) {
	c := windowCase(t, `
  - id: w/1
    given: {doc: {nodes: []}}
    steps: []
`)
	if c.Suite() != cases.SuiteWindow {
		t.Fatalf("suite %q, want %q", c.Suite(), cases.SuiteWindow)
	}
	if o := cases.Check(context.Background(), cases.Reference{}, c); o.Status != cases.Pass {
		t.Fatalf("an empty script: %s %s", o.Status, o.Diff)
	}
}

func TestWindowWrongExpectationFails(t *testing.T) {
	edit := map[string]any{"id": "c1", "type": "edit-text", "payload": map[string]any{"node": "a", "text": "A1"}}
	c := cases.Case{
		ID: "window/wrong-seq",
		Given: map[string]any{
			"doc": map[string]any{"nodes": []any{map[string]any{"id": "a", "rank": "a0", "text": "A"}}},
			"seq": float64(2),
		},
		Steps: []any{
			map[string]any{"event": map[string]any{"local": edit}, "expect": map[string]any{"seq": float64(2), "pending": []any{"c1"}}},
			map[string]any{"event": map[string]any{"echo": map[string]any{"seq": float64(3), "cmd": edit}}, "expect": map[string]any{"seq": float64(9)}},
		},
	}
	o := cases.Check(context.Background(), cases.Reference{}, c)
	if o.Status != cases.Fail {
		t.Fatalf("status %s, want fail (%s)", o.Status, o.Diff)
	}
	if !strings.Contains(o.Diff, "step 2 seq:\n  event: {\"echo\":{\"cmd\":") || !strings.Contains(o.Diff, "- 9") || !strings.Contains(o.Diff, "+ 3") {
		t.Fatalf("diff does not name step 2 and its seqs:\n%s", o.Diff)
	}
	if strings.Contains(o.Diff, "step 1") {
		t.Fatalf("step 1 is right but reported:\n%s", o.Diff)
	}
}

func TestWindowWrongDocsAndListsFail(t *testing.T) {
	c := windowCase(t, `
  - id: w/wrong
    given: {doc: {nodes: [{id: a, rank: a0, text: A}]}}
    steps:
      - event: {local: {id: c1, type: edit-text, payload: {node: a, text: A1}}}
        expect:
          pending: []
          actions: [send:c2]
          rendered: {nodes: [{id: a, rank: a0, text: A}]}
          server: {nodes: [{id: a, rank: a0, text: A}]}
`)
	o := cases.Check(context.Background(), cases.Reference{}, c)
	if o.Status != cases.Fail {
		t.Fatalf("status %s, want fail (%s)", o.Status, o.Diff)
	}
	for _, want := range []string{"step 1 pending:", "step 1 actions:", "step 1 rendered:", `(?m)^-\s+"text": "A"$`, `(?m)^\+\s+"text": "A1"$`} {
		if !regexp.MustCompile(want).MatchString(o.Diff) {
			t.Errorf("diff lacks %q:\n%s", want, o.Diff)
		}
	}
	if strings.Contains(o.Diff, "step 1 server:") {
		t.Errorf("server is right but reported:\n%s", o.Diff)
	}
}

// shortImpl answers every window script with one state too few.
type shortImpl struct{ cases.Reference }

func (s shortImpl) Window(ctx context.Context, req cases.WindowRequest) ([]cases.WindowState, error) {
	st, err := s.Reference.Window(ctx, req)
	if len(st) > 0 {
		st = st[:len(st)-1]
	}
	return st, err
}

func TestWindowWrongNumberOfStatesFails(t *testing.T) {
	c := windowCase(t, `
  - id: w/short
    given: {doc: {nodes: [{id: a, rank: a0, text: A}]}}
    steps:
      - event: {undo: {ids: [u1]}}
`)
	o := cases.Check(context.Background(), shortImpl{}, c)
	if o.Status != cases.Fail || !strings.Contains(o.Diff, "- 1 states") {
		t.Fatalf("status %s, want fail on the count:\n%s", o.Status, o.Diff)
	}
}

func TestWindowBadCasesError(t *testing.T) {
	for name, body := range map[string]string{
		"two events": `
  - id: w/bad
    given: {doc: {nodes: []}}
    steps:
      - event: {undo: {ids: [u1]}, redo: {ids: [r1]}}
`,
		"unknown event": `
  - id: w/bad
    given: {doc: {nodes: []}}
    steps:
      - event: {shout: {}}
`,
		"unknown expect key": `
  - id: w/bad
    given: {doc: {nodes: []}}
    steps:
      - event: {undo: {ids: [u1]}}
        expect: {toasts: []}
`,
		"unknown step key": `
  - id: w/bad
    given: {doc: {nodes: []}}
    steps:
      - event: {undo: {ids: [u1]}}
        then: {}
`,
		"invalid snapshot doc": `
  - id: w/bad
    given: {doc: {nodes: []}}
    steps:
      - event: {snapshot: {doc: {nodes: [{id: a, rank: "!", text: A}]}, seq: 1}}
`,
		"bad given seq": `
  - id: w/bad
    given: {doc: {nodes: []}, seq: -1}
    steps: []
`,
	} {
		c := windowCase(t, body)
		if o := cases.Check(context.Background(), cases.Reference{}, c); o.Status != cases.Error {
			t.Errorf("%s: status %s, want error (%s)", name, o.Status, o.Diff)
		}
	}
}

func TestReferenceWindowStrictDecoding(t *testing.T) {
	given := json.RawMessage(`{"doc":{"nodes":[],"page":{"id":"p","title":"T","aliases":[],"dir":"","merged_into":null}},"seq":0}`)
	for name, step := range map[string]string{
		"two events":        `{"undo":{"ids":["u1"]},"redo":{"ids":["r1"]}}`,
		"no event":          `{}`,
		"unknown event":     `{"shout":{}}`,
		"unknown field":     `{"undo":{"ids":["u1"],"why":1}}`,
		"echo without cmd":  `{"echo":{"seq":1}}`,
		"reject without id": `{"reject":{"code":"x"}}`,
		"snapshot no doc":   `{"snapshot":{"seq":1}}`,
		"trailing data":     `{"undo":{"ids":[]}} 1`,
	} {
		_, err := cases.Reference{}.Window(context.Background(), cases.WindowRequest{Given: given, Steps: []json.RawMessage{json.RawMessage(step)}})
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	st, err := cases.Reference{}.Window(context.Background(), cases.WindowRequest{Given: given, Steps: []json.RawMessage{
		json.RawMessage(`{"local":{"id":"c1","type":"create-after","payload":{"text":"N"}}}`),
		json.RawMessage(`{"undo":{"ids":["u1"]}}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(st)
	want := `[{"seq":0,"pending":["c1"],"rendered":{"nodes":[{"id":"c1","kind":"text","parent":null,"rank":"a0","text":"N"}],"page":{"aliases":[],"dir":"","id":"p","merged_into":null,"title":"T"}},"server":{"nodes":[],"page":{"aliases":[],"dir":"","id":"p","merged_into":null,"title":"T"}},"actions":["send:c1"]},` +
		`{"seq":0,"pending":["c1","u1"],"rendered":{"nodes":[],"page":{"aliases":[],"dir":"","id":"p","merged_into":null,"title":"T"}},"server":{"nodes":[],"page":{"aliases":[],"dir":"","id":"p","merged_into":null,"title":"T"}},"actions":["send:u1"]}]`
	if string(got) != want {
		t.Fatalf("states:\n got %s\nwant %s", got, want)
	}
}

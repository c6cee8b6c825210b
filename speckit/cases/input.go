package cases

import (
	"encoding/json"
	"fmt"
)

// Input returns the request a case sends to an implementation, as the
// adapter message of spec/ADAPTER.md without its msg_id: {"type": "apply",
// "doc", "cmd"}, {"type": "tokenize", "text" | "formula"}, {"type":
// "window", "given", "steps"}, {"type": "plan", "workspace", "pages",
// "page", "cmd"} or {"type": "canonical", "doc" | "value"}, documents in
// canonical form (but a canonical case's, sent as written). Reports show it beside the
// diff of a failing case, so the input document and command can be read
// (or piped into `kbkit adapter` with a msg_id) without opening the case
// file.
func Input(c Case) (map[string]any, error) {
	switch c.Suite() {
	case SuiteCommands:
		given, _, cmd, err := CaseDocs(c)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "apply", "doc": json.RawMessage(given), "cmd": cmd}, nil
	case SuiteTokenizer:
		if s, ok := c.When["text"].(string); ok {
			return map[string]any{"type": "tokenize", "text": s}, nil
		}
		if s, ok := c.When["formula"].(string); ok {
			return map[string]any{"type": "tokenize", "formula": s}, nil
		}
		return nil, fmt.Errorf("%w: when.text or when.formula must be a string", ErrFormat)
	case SuiteWindow:
		req, _, _, err := windowScript(c)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "window", "given": req.Given, "steps": req.Steps}, nil
	case SuitePlanner:
		req, _, err := planRequest(c)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "plan", "workspace": req.Workspace, "pages": req.Pages,
			"page": req.Page, "cmd": req.Cmd}, nil
	case SuiteCanonical:
		req, _, err := canonicalInput(c)
		if err != nil {
			return nil, err
		}
		if req.Doc != nil {
			return map[string]any{"type": "canonical", "doc": req.Doc}, nil
		}
		return map[string]any{"type": "canonical", "value": req.Value}, nil
	}
	return nil, fmt.Errorf("%w: case has no known shape (when.cmd, when.text, when.formula, when.doc, when.value, steps)", ErrFormat)
}

// plainInput is Input decoded into plain JSON values (maps, slices,
// strings, float64), as YAML and JSON reports encode them; nil when the
// case has no input to show (a bad case).
func plainInput(c Case) map[string]any {
	in, err := Input(c)
	if err != nil {
		return nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

package cases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/kbcore/token"
)

// Status of one checked case.
type Status string

// Statuses, in TAP terms: Pass and Skip are ok; Fail is not ok; Error means
// the case could not be checked (bad case, crashed implementation).
const (
	Pass  Status = "pass"
	Fail  Status = "fail"
	Skip  Status = "skip"
	Error Status = "error"
)

// Outcome is the verdict on one case.
type Outcome struct {
	ID     string `json:"id"`
	Suite  string `json:"suite"`
	File   string `json:"file"`
	Line   int    `json:"line"`
	Status Status `json:"status"`
	// Diff explains a failure or error: "-" lines are expected, "+" got.
	Diff string `json:"diff,omitempty"`
	// Input is the request the case sent (Input), set on a failure or an
	// error, so a report shows the document and command beside the diff.
	Input map[string]any `json:"input,omitempty"`
}

// Rejected is a rejection as implementations report it.
type Rejected struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ApplyReply is an implementation's answer to `apply`.
type ApplyReply struct {
	Doc      json.RawMessage   `json:"doc,omitempty"`
	Rejected *Rejected         `json:"rejected,omitempty"`
	Inverse  []json.RawMessage `json:"inverse,omitempty"`
	Index    json.RawMessage   `json:"index,omitempty"`
}

// TokenizeRequest asks for the tokens of node text or of a formula.
type TokenizeRequest struct {
	Text    *string `json:"text,omitempty"`
	Formula *string `json:"formula,omitempty"`
}

// TokenizeReply is an implementation's answer to `tokenize`.
type TokenizeReply struct {
	Refs  json.RawMessage `json:"refs"`
	Label json.RawMessage `json:"label"`
	Deps  json.RawMessage `json:"deps"`
}

// ErrNotSupported is returned by an implementation for a suite or message it
// does not implement; the case is skipped.
var ErrNotSupported = errors.New("cases: not supported")

// WindowRequest runs one window script: given is {doc, seq} with doc in
// canonical form; each step is an event object as in spec/window.md, with
// its documents (snapshot.doc) in canonical form.
type WindowRequest struct {
	Given json.RawMessage   `json:"given"`
	Steps []json.RawMessage `json:"steps"`
}

// WindowState is the window's state after one step.
type WindowState struct {
	Seq      int64           `json:"seq"`
	Pending  []string        `json:"pending"`
	Rendered json.RawMessage `json:"rendered"`
	Server   json.RawMessage `json:"server"`
	Actions  []string        `json:"actions"`
}

// Impl is an implementation under test. Errors mean the implementation could
// not answer (the case errors); a rejection is a normal ApplyReply.
// ErrNotSupported (wrapped or not) skips the case.
type Impl interface {
	Apply(ctx context.Context, doc, cmd json.RawMessage) (ApplyReply, error)
	Tokenize(ctx context.Context, req TokenizeRequest) (TokenizeReply, error)
	Window(ctx context.Context, req WindowRequest) ([]WindowState, error)
}

// Reference is kbkit's own implementation, called in process.
type Reference struct{}

// Apply runs kbcore.Apply.
func (Reference) Apply(_ context.Context, doc, cmd json.RawMessage) (ApplyReply, error) {
	d, err := kbcore.ParseDoc(doc)
	if err != nil {
		return ApplyReply{}, err
	}
	c, unshaped, err := kbcore.ReadCommand(cmd)
	if err != nil {
		return ApplyReply{}, fmt.Errorf("cmd: %w", err)
	}
	if unshaped != "" {
		rej := kbcore.RejectUnshaped(d, c.Type, unshaped)
		return ApplyReply{Rejected: &Rejected{Code: rej.Code, Message: rej.Message}}, nil
	}
	res := kbcore.Apply(d, c)
	if res.Rejected != nil {
		return ApplyReply{Rejected: &Rejected{Code: res.Rejected.Code, Message: res.Rejected.Message}}, nil
	}
	out := ApplyReply{}
	out.Doc, _ = res.Doc.MarshalJSON()
	for _, inv := range res.Inverse {
		b, _ := json.Marshal(map[string]any{"type": inv.Type, "payload": inv.Payload})
		out.Inverse = append(out.Inverse, b)
	}
	out.Index, _ = json.Marshal(res.Doc.Index())
	return out, nil
}

// Tokenize runs the kbcore tokenizer.
func (Reference) Tokenize(_ context.Context, req TokenizeRequest) (TokenizeReply, error) {
	var out TokenizeReply
	switch {
	case req.Text != nil:
		t := token.Tokenize(*req.Text)
		out.Refs, _ = json.Marshal(nonNil(t.Refs))
		out.Label, _ = json.Marshal(t.Label)
		out.Deps = json.RawMessage("[]")
	case req.Formula != nil:
		f := token.TokenizeFormula(*req.Formula)
		out.Refs, _ = json.Marshal(nonNil(f.Refs))
		out.Label = json.RawMessage("null")
		out.Deps, _ = json.Marshal(nonNil(f.Deps))
	default:
		return out, fmt.Errorf("tokenize: neither text nor formula")
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Check runs one case against impl.
func Check(ctx context.Context, impl Impl, c Case) Outcome {
	o := Outcome{ID: c.ID, Suite: c.Suite(), File: c.File, Line: c.Line}
	var diff string
	var err error
	switch o.Suite {
	case SuiteCommands:
		diff, err = checkCommand(ctx, impl, c)
	case SuiteTokenizer:
		diff, err = checkTokenizer(ctx, impl, c)
	case SuiteWindow:
		diff, err = checkWindow(ctx, impl, c)
	case SuitePlanner:
		diff, err = checkPlanner(ctx, impl, c)
	case SuiteCanonical:
		diff, err = checkCanonical(ctx, impl, c)
	default:
		err = fmt.Errorf("%w: case has no known shape (when.cmd, when.text, when.formula, when.doc, when.value, steps)", ErrFormat)
	}
	switch {
	case errors.Is(err, ErrNotSupported):
		o.Status, o.Diff = Skip, err.Error()
	case err != nil:
		o.Status, o.Diff = Error, err.Error()
	case diff != "":
		o.Status, o.Diff = Fail, diff
	default:
		o.Status = Pass
	}
	if o.Status == Fail || o.Status == Error {
		o.Input = plainInput(c)
	}
	return o
}

// CaseDocs returns the given and (when accepted) expected documents of a
// command case in canonical JSON, and the command.
func CaseDocs(c Case) (given, want []byte, cmd json.RawMessage, err error) {
	gd, ok := c.Given["doc"]
	if !ok {
		gd = map[string]any{}
	}
	given, err = ExpandDoc(gd, DefaultPage)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: given.doc: %v", ErrFormat, err)
	}
	g, err := kbcore.ParseDoc(given)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: given.doc: %v", ErrFormat, err)
	}
	given, _ = g.MarshalJSON()
	cmd, err = json.Marshal(c.When["cmd"])
	if err != nil {
		return nil, nil, nil, err
	}
	_, hasDoc := c.Then["doc"]
	_, hasRej := c.Then["rejected"]
	if hasDoc == hasRej {
		return nil, nil, nil, fmt.Errorf("%w: then needs exactly one of doc or rejected", ErrFormat)
	}
	if hasDoc {
		page := g.Page()
		pm := map[string]any{}
		pb, _ := page.MarshalJSON()
		_ = json.Unmarshal(pb, &pm)
		if want, err = ExpandDoc(c.Then["doc"], pm); err != nil {
			return nil, nil, nil, fmt.Errorf("%w: then.doc: %v", ErrFormat, err)
		}
		w, err := kbcore.ParseDoc(want)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: then.doc: %v", ErrFormat, err)
		}
		want, _ = w.MarshalJSON()
	}
	return given, want, cmd, nil
}

func checkCommand(ctx context.Context, impl Impl, c Case) (string, error) {
	given, want, cmd, err := CaseDocs(c)
	if err != nil {
		return "", err
	}
	reply, err := impl.Apply(ctx, given, cmd)
	if err != nil {
		return "", err
	}
	var diffs []string
	if code, ok := c.Then["rejected"]; ok {
		if reply.Rejected == nil {
			got := []part{rawPart("doc", reply.Doc)}
			var inv []any
			for _, raw := range reply.Inverse {
				inv = append(inv, rawPart("", raw).value)
			}
			got = append(got, part{"inverse", nonNil(inv)})
			return fmt.Sprintf("- rejected: %v\n", code) + verdictBlock("+", "accepted:", got...), nil
		}
		if reply.Rejected.Code != fmt.Sprint(code) {
			return fmt.Sprintf("- rejected: %v\n+ rejected: %s (%s)\n", code, reply.Rejected.Code, reply.Rejected.Message), nil
		}
		return "", nil
	}
	if reply.Rejected != nil {
		want := append([]part{rawPart("doc", want)}, wantedParts(c.Then, "inverse", "index")...)
		return verdictBlock("-", "accepted:", want...) + "+ " + rejectedHead(reply.Rejected) + "\n", nil
	}
	got, err := kbcore.ParseDoc(reply.Doc)
	if err != nil {
		return fmt.Sprintf("+ invalid document: %v\n", err), nil
	}
	gotJSON, _ := got.MarshalJSON()
	if w, g := Canon(want), Canon(gotJSON); w != g {
		diffs = append(diffs, "doc:\n"+Diff(w, g))
	}
	if inv, ok := c.Then["inverse"]; ok {
		var gotInv []any
		for _, raw := range reply.Inverse {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				return "", fmt.Errorf("inverse: %v", err)
			}
			delete(m, "id")
			gotInv = append(gotInv, m)
		}
		if gotInv == nil {
			gotInv = []any{}
		}
		if !reflect.DeepEqual(inv, gotInv) {
			diffs = append(diffs, "inverse:\n"+Diff(Canon(inv), Canon(gotInv)))
		}
	}
	if idx, ok := c.Then["index"]; ok {
		var gotIdx any
		if err := json.Unmarshal(reply.Index, &gotIdx); err != nil {
			return "", fmt.Errorf("index: %v", err)
		}
		if !reflect.DeepEqual(idx, gotIdx) {
			diffs = append(diffs, "index:\n"+Diff(Canon(idx), Canon(gotIdx)))
		}
	}
	return strings.Join(diffs, ""), nil
}

func checkTokenizer(ctx context.Context, impl Impl, c Case) (string, error) {
	var req TokenizeRequest
	if s, ok := c.When["text"].(string); ok {
		req.Text = &s
	} else if s, ok := c.When["formula"].(string); ok {
		req.Formula = &s
	} else {
		return "", fmt.Errorf("%w: when.text or when.formula must be a string", ErrFormat)
	}
	reply, err := impl.Tokenize(ctx, req)
	if err != nil {
		return "", err
	}
	got := map[string]json.RawMessage{"refs": reply.Refs, "label": reply.Label, "deps": reply.Deps}
	var diffs []string
	for _, key := range sortedKeys(c.Then) {
		want := c.Then[key]
		raw, ok := got[key]
		if !ok {
			return "", fmt.Errorf("%w: then.%s is not a tokenizer result", ErrFormat, key)
		}
		var g any
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &g); err != nil {
				return "", fmt.Errorf("%s: %v", key, err)
			}
		}
		if key != "label" && g == nil {
			g = []any{}
		}
		if !reflect.DeepEqual(want, g) {
			diffs = append(diffs, key+":\n"+Diff(Canon(want), Canon(g)))
		}
	}
	return strings.Join(diffs, ""), nil
}

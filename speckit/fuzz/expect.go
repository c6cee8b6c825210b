package fuzz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// errInvalid marks an input the reference cannot take as a case (a
// document it cannot parse, a command it cannot read): the input is
// dropped, as a Hypothesis assume() would.
var errInvalid = fmt.Errorf("fuzz: not a valid input")

// Expected fills in the expected side of an input (Then, or each step's
// expect) from the reference's reply, and names the case
// <area>/fuzz-<kind>-<hash of the input>, where area is the spec file the
// case would live in (the command type, tokenizer, window, planner or
// canonical), so
// that expectations files written for `kbkit spec run` globs (such as
// "move-node/*") cover fuzzed cases of that area too.
func Expected(ctx context.Context, ref cases.Reference, c cases.Case) (cases.Case, error) {
	var err error
	switch c.Suite() {
	case cases.SuiteCommands:
		err = expectCommand(ctx, ref, &c)
	case cases.SuiteTokenizer:
		err = expectTokenizer(ctx, ref, &c)
	case cases.SuiteWindow:
		err = expectWindow(ctx, ref, &c)
	case cases.SuitePlanner:
		err = expectPlan(ctx, ref, &c)
	case cases.SuiteCanonical:
		err = expectCanonical(ctx, ref, &c)
	default:
		err = fmt.Errorf("%w: no suite", errInvalid)
	}
	if err != nil {
		return c, err
	}
	c.ID = caseID(c)
	c.Description = "found by kbkit spec fuzz; the expected side is the reference's reply"
	trimGiven(c)
	return c, nil
}

// trimGiven drops from the given page records the fields the case runner
// completes them with anyway (cases.DefaultPage's), once the case is
// named: the case means the same and reads shorter.
func trimGiven(c cases.Case) {
	trim := func(doc any) {
		d, _ := doc.(map[string]any)
		if rec, ok := d["page"].(map[string]any); ok {
			for k, v := range cases.DefaultPage {
				if k != "id" && reflect.DeepEqual(rec[k], v) {
					delete(rec, k)
				}
			}
		}
	}
	trim(c.Given["doc"])
	pages, _ := c.Given["pages"].([]any)
	for _, p := range pages {
		trim(p)
	}
}

// caseID names a case by its area, kind and input.
func caseID(c cases.Case) string {
	in, _ := json.Marshal(map[string]any{"given": c.Given, "when": c.When, "steps": stripExpect(c.Steps)})
	sum := sha256.Sum256(in)
	h := hex.EncodeToString(sum[:4])
	switch c.Suite() {
	case cases.SuiteCommands:
		return commandArea(c.When["cmd"]) + "/fuzz-" + h
	case cases.SuiteTokenizer:
		if _, ok := c.When["formula"]; ok {
			return "tokenizer/fuzz-formula-" + h
		}
		return "tokenizer/fuzz-text-" + h
	case cases.SuiteWindow:
		return "window/fuzz-" + h
	case cases.SuiteCanonical:
		return cases.CanonicalPrefix + "fuzz-" + canonicalWhat(c) + "-" + h
	default:
		typ := commandArea(c.When["cmd"])
		return "planner/fuzz-" + typ + "-" + h
	}
}

// commandArea is the command's type when it is one of the spec's, else
// "unknown-type".
func commandArea(cmd any) string {
	m, _ := cmd.(map[string]any)
	if t, ok := m["type"].(string); ok {
		for _, k := range kbcore.Types {
			if k == t {
				return t
			}
		}
	}
	return "unknown-type"
}

func expectCommand(ctx context.Context, ref cases.Reference, c *cases.Case) error {
	b, err := cases.ExpandDoc(c.Given["doc"], cases.DefaultPage)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	d, err := kbcore.ParseDoc(b)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	given, _ := d.MarshalJSON()
	cmd, err := json.Marshal(c.When["cmd"])
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	r, err := ref.Apply(ctx, given, cmd)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	if r.Rejected != nil {
		c.Then = map[string]any{"rejected": r.Rejected.Code}
		return nil
	}
	nd, err := kbcore.ParseDoc(r.Doc)
	if err != nil {
		return err
	}
	inv := []any{}
	for _, raw := range r.Inverse {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		delete(m, "id")
		inv = append(inv, m)
	}
	var idx any
	if err := json.Unmarshal(r.Index, &idx); err != nil {
		return err
	}
	c.Then = map[string]any{"doc": plainDoc(nd, pageMap(d)), "inverse": inv, "index": idx}
	return nil
}

func expectTokenizer(ctx context.Context, ref cases.Reference, c *cases.Case) error {
	var req cases.TokenizeRequest
	if s, ok := c.When["text"].(string); ok {
		req.Text = &s
	} else if s, ok := c.When["formula"].(string); ok {
		req.Formula = &s
	}
	r, err := ref.Tokenize(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	c.Then = map[string]any{}
	for k, raw := range map[string]json.RawMessage{"refs": r.Refs, "label": r.Label, "deps": r.Deps} {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		c.Then[k] = v
	}
	return nil
}

func expectWindow(ctx context.Context, ref cases.Reference, c *cases.Case) error {
	in, err := cases.Input(*c)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	req := cases.WindowRequest{Given: in["given"].(json.RawMessage)}
	req.Steps, _ = in["steps"].([]json.RawMessage)
	states, err := ref.Window(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	var g struct {
		Doc kbcore.Doc `json:"doc"`
	}
	if err := json.Unmarshal(req.Given, &g); err != nil {
		return err
	}
	page := pageMap(g.Doc)
	for i, st := range states {
		rd, err := kbcore.ParseDoc(st.Rendered)
		if err != nil {
			return err
		}
		sd, err := kbcore.ParseDoc(st.Server)
		if err != nil {
			return err
		}
		step := c.Steps[i].(map[string]any)
		step["expect"] = map[string]any{
			"seq": float64(st.Seq), "pending": strs(st.Pending), "actions": strs(st.Actions),
			"rendered": plainDoc(rd, page), "server": plainDoc(sd, page),
		}
	}
	return nil
}

func strs(xs []string) []any {
	out := make([]any, 0, len(xs))
	for _, x := range xs {
		out = append(out, x)
	}
	return out
}

func expectPlan(ctx context.Context, ref cases.Reference, c *cases.Case) error {
	in, err := cases.Input(*c)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	req := cases.PlanRequest{Workspace: in["workspace"].(string), Pages: in["pages"].([]json.RawMessage),
		Page: in["page"].(string), Cmd: in["cmd"].(json.RawMessage)}
	r, err := ref.Plan(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	if r.Rejected != nil {
		c.Then = map[string]any{"rejected": r.Rejected.Code}
		return nil
	}
	given := map[string]map[string]any{}
	for _, raw := range req.Pages {
		d, err := kbcore.ParseDoc(raw)
		if err != nil {
			return err
		}
		given[d.Page().ID] = pageMap(d)
	}
	effects := []any{}
	for _, e := range r.Effects {
		var cmd any
		if err := json.Unmarshal(e.Cmd, &cmd); err != nil {
			return err
		}
		m := map[string]any{"page": e.Page, "cmd": cmd}
		if e.Cause != "" {
			m["cause"] = e.Cause
		}
		effects = append(effects, m)
	}
	pages := map[string]any{}
	for id, raw := range r.Pages {
		d, err := kbcore.ParseDoc(raw)
		if err != nil {
			return err
		}
		page := given[id]
		if page == nil {
			page = map[string]any{}
			for k, v := range cases.DefaultPage {
				page[k] = v
			}
			page["id"] = id
		}
		pages[id] = plainDoc(d, page)
	}
	c.Then = map[string]any{"effects": effects, "pages": pages}
	return nil
}

// pageMap is a document's page record as plain JSON values.
func pageMap(d kbcore.Doc) map[string]any {
	b, _ := d.Page().MarshalJSON()
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// plainDoc is d as a case writes a document: nodes without their default
// fields (parent null, kind text, text "", empty outputs and cells) and
// without the page record when it is page, the record the case runner
// completes it from.
func plainDoc(d kbcore.Doc, page map[string]any) map[string]any {
	b, _ := d.MarshalJSON()
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	nodes, _ := m["nodes"].([]any)
	for _, n := range nodes {
		nm := n.(map[string]any)
		if nm["parent"] == nil {
			delete(nm, "parent")
		}
		if nm["kind"] == "text" {
			delete(nm, "kind")
		}
		if nm["text"] == "" {
			delete(nm, "text")
		}
	}
	if nodes == nil {
		m["nodes"] = []any{}
	}
	if rec, ok := m["page"].(map[string]any); ok && page != nil {
		// The runner completes a partial record from page: keep what differs.
		for k, v := range page {
			if k != "id" && reflect.DeepEqual(rec[k], v) {
				delete(rec, k)
			}
		}
		if len(rec) == 1 && reflect.DeepEqual(rec["id"], page["id"]) {
			delete(m, "page")
		}
	}
	return m
}

// inputSize is the size of an input as the JSON of its given, when and
// steps, in bytes: the measure shrinking reports.
func inputSize(c cases.Case) int {
	var b strings.Builder
	_ = json.NewEncoder(&b).Encode(map[string]any{"given": c.Given, "when": c.When, "steps": stripExpect(c.Steps)})
	return b.Len()
}

// stripExpect is steps without their expect (the input alone).
func stripExpect(steps []any) []any {
	out := make([]any, 0, len(steps))
	for _, s := range steps {
		m, _ := s.(map[string]any)
		out = append(out, map[string]any{"event": m["event"]})
	}
	return out
}

package cases

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/subspace/kbkit/kbcore"
)

// SuitePlanner is the suite of cases whose given has `pages`.
const SuitePlanner = "planner"

// DefaultWorkspace is the workspace id of planner cases that omit it.
const DefaultWorkspace = "00000000-0000-0000-0000-0000000000aa"

// PlanRequest asks an implementation to plan one command.
type PlanRequest struct {
	Workspace string            `json:"workspace"`
	Pages     []json.RawMessage `json:"pages"` // canonical documents
	Page      string            `json:"page"`  // the envelope's page_id
	Cmd       json.RawMessage   `json:"cmd"`
}

// PlanEffect is one effect of a plan.
type PlanEffect struct {
	Page  string          `json:"page"`
	Cmd   json.RawMessage `json:"cmd"`
	Cause string          `json:"cause,omitempty"`
}

// PlanReply is an implementation's plan: a rejection, or the effects and the
// documents of the touched pages after them.
type PlanReply struct {
	Rejected *Rejected                  `json:"rejected,omitempty"`
	Effects  []PlanEffect               `json:"effects,omitempty"`
	Pages    map[string]json.RawMessage `json:"pages,omitempty"`
}

// Planner is implemented by implementations that run the planner suite;
// the others skip it.
type Planner interface {
	Plan(ctx context.Context, req PlanRequest) (PlanReply, error)
}

// Plan runs kbcore.PlanCommand over an in-memory workspace.
func (Reference) Plan(_ context.Context, req PlanRequest) (PlanReply, error) {
	var docs []kbcore.Doc
	for i, raw := range req.Pages {
		d, err := kbcore.ParseDoc(raw)
		if err != nil {
			return PlanReply{}, fmt.Errorf("pages[%d]: %w", i, err)
		}
		docs = append(docs, d)
	}
	c, unshaped, err := kbcore.ReadCommand(req.Cmd)
	if err != nil {
		return PlanReply{}, fmt.Errorf("cmd: %w", err)
	}
	if unshaped != "" {
		rej := kbcore.PlanUnshaped(docs, req.Page, c.Type, unshaped)
		return PlanReply{Rejected: &Rejected{Code: rej.Code, Message: rej.Message}}, nil
	}
	plan := kbcore.PlanCommand(kbcore.NewMemKB(docs...), req.Workspace, kbcore.Envelope{
		ID: c.ID, PageID: req.Page, Type: c.Type, Payload: c.Payload})
	if plan.Rejected != nil {
		return PlanReply{Rejected: &Rejected{Code: plan.Rejected.Code, Message: plan.Rejected.Message}}, nil
	}
	out := PlanReply{Pages: map[string]json.RawMessage{}}
	for _, e := range plan.Effects {
		b, _ := json.Marshal(e.Cmd)
		out.Effects = append(out.Effects, PlanEffect{Page: e.PageID, Cmd: b, Cause: e.Cause})
	}
	for id, d := range plan.Docs {
		out.Pages[id], _ = d.MarshalJSON()
	}
	return out, nil
}

// gotPlanParts is an accepted plan as a report shows it: the effects
// (the cause omitted for the origin) and the pages touched.
func gotPlanParts(reply PlanReply) []part {
	effects := make([]any, 0, len(reply.Effects))
	for _, e := range reply.Effects {
		m := map[string]any{"page": e.Page, "cmd": rawPart("", e.Cmd).value}
		if e.Cause != "" {
			m["cause"] = e.Cause
		}
		effects = append(effects, m)
	}
	pages := map[string]any{}
	for id, raw := range reply.Pages {
		pages[id] = rawPart("", raw).value
	}
	return []part{{"effects", effects}, {"pages", pages}}
}

// planRequest builds the plan request of a planner case and returns, with
// it, the page record of each given page by id.
func planRequest(c Case) (PlanRequest, map[string]map[string]any, error) {
	pages, ok := c.Given["pages"].([]any)
	if !ok {
		return PlanRequest{}, nil, fmt.Errorf("%w: given.pages must be a list", ErrFormat)
	}
	req := PlanRequest{Workspace: DefaultWorkspace}
	if ws, ok := c.Given["workspace"].(string); ok {
		req.Workspace = ws
	}
	given := map[string]map[string]any{} // page id -> page record
	for i, p := range pages {
		b, err := ExpandDoc(p, DefaultPage)
		if err != nil {
			return PlanRequest{}, nil, fmt.Errorf("%w: given.pages[%d]: %v", ErrFormat, i, err)
		}
		d, err := kbcore.ParseDoc(b)
		if err != nil {
			return PlanRequest{}, nil, fmt.Errorf("%w: given.pages[%d]: %v", ErrFormat, i, err)
		}
		canon, _ := d.MarshalJSON()
		req.Pages = append(req.Pages, canon)
		pm := map[string]any{}
		pb, _ := d.Page().MarshalJSON()
		_ = json.Unmarshal(pb, &pm)
		given[d.Page().ID] = pm
	}
	req.Page, _ = c.When["page"].(string)
	var err error
	if req.Cmd, err = json.Marshal(c.When["cmd"]); err != nil {
		return PlanRequest{}, nil, err
	}
	return req, given, nil
}

func checkPlanner(ctx context.Context, impl Impl, c Case) (string, error) {
	pl, ok := impl.(Planner)
	if !ok {
		return "", fmt.Errorf("%w: planner suite", ErrNotSupported)
	}
	req, given, err := planRequest(c)
	if err != nil {
		return "", err
	}
	reply, err := pl.Plan(ctx, req)
	if err != nil {
		return "", err
	}
	if code, ok := c.Then["rejected"]; ok {
		switch {
		case reply.Rejected == nil:
			return fmt.Sprintf("- rejected: %v\n", code) + verdictBlock("+", "accepted:", gotPlanParts(reply)...), nil
		case reply.Rejected.Code != fmt.Sprint(code):
			return fmt.Sprintf("- rejected: %v\n+ rejected: %s (%s)\n", code, reply.Rejected.Code, reply.Rejected.Message), nil
		}
		return "", nil
	}
	if reply.Rejected != nil {
		return verdictBlock("-", "accepted:", wantedParts(c.Then, "effects", "pages")...) + "+ " + rejectedHead(reply.Rejected) + "\n", nil
	}
	var diffs []string
	if want, ok := c.Then["effects"].([]any); ok {
		got := make([]any, 0, len(reply.Effects))
		for i, e := range reply.Effects {
			var cmd map[string]any
			if err := json.Unmarshal(e.Cmd, &cmd); err != nil {
				return "", fmt.Errorf("effects[%d].cmd: %v", i, err)
			}
			g := map[string]any{"page": e.Page, "cmd": cmd}
			if e.Cause != "" {
				g["cause"] = e.Cause
			}
			// Ids are compared only where the case states them.
			if i < len(want) {
				if w, ok := want[i].(map[string]any); ok {
					if wc, ok := w["cmd"].(map[string]any); ok {
						if _, has := wc["id"]; !has {
							delete(cmd, "id")
						}
					}
				}
			}
			got = append(got, g)
		}
		if !reflect.DeepEqual(want, got) {
			diffs = append(diffs, "effects:\n"+Diff(Canon(want), Canon(got)))
		}
	}
	if want, ok := c.Then["pages"].(map[string]any); ok {
		for _, id := range sortedKeys(want) {
			page := given[id]
			if page == nil {
				page = map[string]any{}
				for k, v := range DefaultPage {
					page[k] = v
				}
				page["id"] = id
			}
			wb, err := ExpandDoc(want[id], page)
			if err != nil {
				return "", fmt.Errorf("%w: then.pages.%s: %v", ErrFormat, id, err)
			}
			wd, err := kbcore.ParseDoc(wb)
			if err != nil {
				return "", fmt.Errorf("%w: then.pages.%s: %v", ErrFormat, id, err)
			}
			wj, _ := wd.MarshalJSON()
			gj, ok := reply.Pages[id]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("pages.%s: not touched by the plan\n", id))
				continue
			}
			if w, g := Canon(wj), Canon(gj); w != g {
				diffs = append(diffs, "pages."+id+":\n"+Diff(w, g))
			}
		}
	}
	return strings.Join(diffs, ""), nil
}

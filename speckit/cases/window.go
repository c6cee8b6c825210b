package cases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/subspace/kbkit/kbcore"
)

// SuiteWindow is the suite of cases that have `steps`.
const SuiteWindow = "window"

// windowEvents are the event names of spec/window.md, in spec order.
var windowEvents = []string{"local", "echo", "ack", "reject", "snapshot", "undo", "redo"}

// windowExpects are the keys a step's expect may hold.
var windowExpects = map[string]bool{"seq": true, "pending": true, "rendered": true, "server": true, "actions": true}

// windowEvent is one step's event; exactly one field is set.
type windowEvent struct {
	Local *kbcore.Command `json:"local"`
	Echo  *struct {
		Seq int64           `json:"seq"`
		Cmd *kbcore.Command `json:"cmd"`
	} `json:"echo"`
	Ack *struct {
		ID  string `json:"id"`
		Seq int64  `json:"seq"`
	} `json:"ack"`
	Reject *struct {
		ID   string `json:"id"`
		Code string `json:"code"`
	} `json:"reject"`
	Snapshot *struct {
		Doc      json.RawMessage           `json:"doc"`
		Seq      int64                     `json:"seq"`
		Outcomes map[string]kbcore.Outcome `json:"outcomes"`
	} `json:"snapshot"`
	Undo *windowIDs `json:"undo"`
	Redo *windowIDs `json:"redo"`
}

type windowIDs struct {
	IDs []string `json:"ids"`
}

// strictJSON decodes exactly one JSON value, refusing unknown fields and
// trailing data.
func strictJSON(b []byte, v any) error { return kbcore.DecodeStrict(b, v) }

// Window runs a window script on kbcore.Window.
func (Reference) Window(_ context.Context, req WindowRequest) ([]WindowState, error) {
	var given struct {
		Doc json.RawMessage `json:"doc"`
		Seq int64           `json:"seq"`
	}
	if err := strictJSON(req.Given, &given); err != nil {
		return nil, fmt.Errorf("window: given: %w", err)
	}
	if len(given.Doc) == 0 {
		return nil, errors.New("window: given.doc is missing")
	}
	doc, err := kbcore.ParseDoc(given.Doc)
	if err != nil {
		return nil, fmt.Errorf("window: given.doc: %w", err)
	}
	w := kbcore.NewWindow(doc, given.Seq)
	states := make([]WindowState, 0, len(req.Steps))
	for i, raw := range req.Steps {
		acts, err := windowStep(w, raw)
		if err != nil {
			return nil, fmt.Errorf("window: step %d: %w", i+1, err)
		}
		st := WindowState{Seq: w.Seq(), Pending: []string{}, Actions: []string{}}
		for _, c := range w.Pending() {
			st.Pending = append(st.Pending, c.ID)
		}
		for _, a := range acts {
			st.Actions = append(st.Actions, a.String())
		}
		if st.Rendered, err = w.Rendered().MarshalJSON(); err != nil {
			return nil, err
		}
		if st.Server, err = w.Server().MarshalJSON(); err != nil {
			return nil, err
		}
		states = append(states, st)
	}
	return states, nil
}

// windowStep decodes one event strictly and delivers it to w.
func windowStep(w *kbcore.Window, raw json.RawMessage) ([]kbcore.Action, error) {
	var ev windowEvent
	if err := strictJSON(raw, &ev); err != nil {
		return nil, err
	}
	set := 0
	for _, p := range []bool{ev.Local != nil, ev.Echo != nil, ev.Ack != nil, ev.Reject != nil, ev.Snapshot != nil, ev.Undo != nil, ev.Redo != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("a step needs exactly one event of %s, got %d", strings.Join(windowEvents, ", "), set)
	}
	switch {
	case ev.Local != nil:
		return w.Local(*ev.Local), nil
	case ev.Echo != nil:
		if ev.Echo.Cmd == nil {
			return nil, errors.New("echo.cmd is missing")
		}
		return w.Echo(ev.Echo.Seq, *ev.Echo.Cmd), nil
	case ev.Ack != nil:
		if ev.Ack.ID == "" {
			return nil, errors.New("ack needs id and seq")
		}
		return w.Ack(ev.Ack.ID, ev.Ack.Seq), nil
	case ev.Reject != nil:
		if ev.Reject.ID == "" || ev.Reject.Code == "" {
			return nil, errors.New("reject needs id and code")
		}
		return w.Reject(ev.Reject.ID, ev.Reject.Code), nil
	case ev.Snapshot != nil:
		if len(ev.Snapshot.Doc) == 0 {
			return nil, errors.New("snapshot.doc is missing")
		}
		d, err := kbcore.ParseDoc(ev.Snapshot.Doc)
		if err != nil {
			return nil, fmt.Errorf("snapshot.doc: %w", err)
		}
		return w.Snapshot(d, ev.Snapshot.Seq, ev.Snapshot.Outcomes), nil
	case ev.Undo != nil:
		return w.Undo(ev.Undo.IDs), nil
	default:
		return w.Redo(ev.Redo.IDs), nil
	}
}

// canonCaseDoc expands a case document (page omitted = page) and returns
// its canonical JSON.
func canonCaseDoc(v any, page map[string]any) ([]byte, error) {
	b, err := ExpandDoc(v, page)
	if err != nil {
		return nil, err
	}
	d, err := kbcore.ParseDoc(b)
	if err != nil {
		return nil, err
	}
	return d.MarshalJSON()
}

// caseSeq reads a seq of a case: a non-negative whole number.
func caseSeq(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || f > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// windowScript turns a window case into the request and each step's expect.
func windowScript(c Case) (WindowRequest, []map[string]any, map[string]any, error) {
	bad := func(format string, args ...any) (WindowRequest, []map[string]any, map[string]any, error) {
		return WindowRequest{}, nil, nil, fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)
	}
	for k := range c.Given {
		if k != "doc" && k != "seq" {
			return bad("given.%s: a window case is given only doc and seq", k)
		}
	}
	gd, ok := c.Given["doc"]
	if !ok {
		gd = map[string]any{}
	}
	given, err := canonCaseDoc(gd, DefaultPage)
	if err != nil {
		return bad("given.doc: %v", err)
	}
	var page map[string]any
	var g struct {
		Page map[string]any `json:"page"`
	}
	_ = json.Unmarshal(given, &g)
	page = g.Page
	var seq int64
	if v, ok := c.Given["seq"]; ok {
		if seq, ok = caseSeq(v); !ok {
			return bad("given.seq must be a non-negative integer, got %v", v)
		}
	}
	req := WindowRequest{Steps: []json.RawMessage{}} // an empty script is [], never null
	req.Given, _ = json.Marshal(map[string]any{"doc": json.RawMessage(given), "seq": seq})
	expects := make([]map[string]any, len(c.Steps))
	for i, s := range c.Steps {
		step, ok := s.(map[string]any)
		if !ok {
			return bad("steps[%d] must be a mapping {event, expect}", i)
		}
		for k := range step {
			if k != "event" && k != "expect" {
				return bad("steps[%d].%s: a step has only event and expect", i, k)
			}
		}
		ev, ok := step["event"].(map[string]any)
		if !ok || len(ev) != 1 {
			return bad("steps[%d].event must be a mapping with exactly one of %s", i, strings.Join(windowEvents, ", "))
		}
		for name, body := range ev {
			known := false
			for _, e := range windowEvents {
				known = known || e == name
			}
			if !known {
				return bad("steps[%d].event: unknown event %q", i, name)
			}
			if name == "snapshot" {
				snap, ok := body.(map[string]any)
				if !ok {
					return bad("steps[%d].event.snapshot must be a mapping", i)
				}
				out := map[string]any{}
				for k, v := range snap {
					out[k] = v
				}
				sd, ok := snap["doc"]
				if !ok {
					return bad("steps[%d].event.snapshot.doc is missing", i)
				}
				d, err := canonCaseDoc(sd, page)
				if err != nil {
					return bad("steps[%d].event.snapshot.doc: %v", i, err)
				}
				out["doc"] = json.RawMessage(d)
				ev = map[string]any{name: out}
			}
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			return bad("steps[%d].event: %v", i, err)
		}
		req.Steps = append(req.Steps, raw)
		exp := map[string]any{}
		if e, ok := step["expect"]; ok && e != nil {
			if exp, ok = e.(map[string]any); !ok {
				return bad("steps[%d].expect must be a mapping", i)
			}
		}
		for k, v := range exp {
			if !windowExpects[k] {
				return bad("steps[%d].expect.%s: not one of seq, pending, rendered, server, actions", i, k)
			}
			switch k {
			case "seq":
				if _, ok := caseSeq(v); !ok {
					return bad("steps[%d].expect.seq must be a non-negative integer", i)
				}
			case "pending", "actions":
				list, ok := v.([]any)
				if !ok {
					return bad("steps[%d].expect.%s must be a list of strings", i, k)
				}
				for _, x := range list {
					if _, ok := x.(string); !ok {
						return bad("steps[%d].expect.%s must be a list of strings", i, k)
					}
				}
			case "rendered", "server":
				if _, err := canonCaseDoc(v, page); err != nil {
					return bad("steps[%d].expect.%s: %v", i, k, err)
				}
			}
		}
		expects[i] = exp
	}
	return req, expects, page, nil
}

// checkWindow runs a window case: the script goes to impl.Window in one
// request, then each step's expectations are compared with the state after
// that step. Steps are numbered from 1 in the diff.
func checkWindow(ctx context.Context, impl Impl, c Case) (string, error) {
	req, expects, page, err := windowScript(c)
	if err != nil {
		return "", err
	}
	states, err := impl.Window(ctx, req)
	if err != nil {
		return "", err
	}
	if len(states) != len(expects) {
		return fmt.Sprintf("- %d states (one per step)\n+ %d states\n", len(expects), len(states)), nil
	}
	var diffs []string
	for i, exp := range expects {
		st := states[i]
		for _, k := range sortedKeys(exp) {
			want := exp[k]
			var w, g string
			switch k {
			case "seq":
				n, _ := caseSeq(want)
				if n != st.Seq {
					w, g = fmt.Sprint(n), fmt.Sprint(st.Seq)
				}
			case "pending", "actions":
				got := st.Pending
				if k == "actions" {
					got = st.Actions
				}
				gotAny := make([]any, 0, len(got))
				for _, s := range got {
					gotAny = append(gotAny, s)
				}
				if !reflect.DeepEqual(want, gotAny) {
					w, g = Canon(want), Canon(gotAny)
				}
			case "rendered", "server":
				wd, _ := canonCaseDoc(want, page)
				raw := st.Rendered
				if k == "server" {
					raw = st.Server
				}
				gd, err := kbcore.ParseDoc(raw)
				if err != nil {
					diffs = append(diffs, fmt.Sprintf("%s+ invalid document: %v\n", stepHead(i, k, req.Steps[i]), err))
					continue
				}
				gj, _ := gd.MarshalJSON()
				if Canon(wd) != Canon(gj) {
					w, g = Canon(wd), Canon(gj)
				}
			}
			if w != g {
				diffs = append(diffs, stepHead(i, k, req.Steps[i])+Diff(w, g))
			}
		}
	}
	return strings.Join(diffs, ""), nil
}

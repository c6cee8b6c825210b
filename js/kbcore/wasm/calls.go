// Command wasm is kbcore compiled to WebAssembly for the @kbkit/core npm
// package (js/kbcore): GOOS=wasip1 with go:wasmexport (exports_wasip1.go)
// is what the package ships; GOOS=js (exports_js.go) is built only to
// compare the two (make wasm-compare).
//
// The transport differs, the calls do not: a call is an operation number,
// up to two integers and up to four byte strings (JSON or plain text), and
// its answer is bytes, JSON on success or the error's text. Every answer
// is what kbkit's reference adapter (speckit/cases.Reference) would
// put in its reply, so the package's adapter is the reference over
// another transport.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/kbcore/rank"
	"github.com/subspace/kbkit/kbcore/token"
)

// Operations; js/kbcore/kbcore.mjs numbers them the same way.
const (
	opApply = iota + 1
	opTokenize
	opTokenizeFormula
	opIndex
	opPlan
	opRankBetween
	opRankNBetween
	opWindowOpen
	opWindowLocal
	opWindowEcho
	opWindowReject
	opWindowSnapshot
	opWindowUndo
	opWindowRedo
	opWindowState
	opWindowClose
	opCanonical
	opWindowAck
	opCanonicalValue
)

// session holds the open windows by handle: the Window state machine
// lives in the module between calls, so an event crosses the boundary as
// its command alone, never as the document.
type session struct {
	windows map[int64]*kbcore.Window
	next    int64
}

func newSession() *session { return &session{windows: map[int64]*kbcore.Window{}} }

// call runs one operation. ints and args are the operation's integers and
// byte strings; it never panics on any input (kbcore is total, and the
// decoding here reports errors).
func (s *session) call(op int, ints [2]int64, args [4][]byte) ([]byte, error) {
	switch op {
	case opApply:
		return apply(args[0], args[1])
	case opTokenize:
		t := token.Tokenize(string(args[0]))
		return marshalObject("refs", nonNil(t.Refs), "label", t.Label)
	case opTokenizeFormula:
		f := token.TokenizeFormula(string(args[0]))
		return marshalObject("refs", nonNil(f.Refs), "deps", nonNil(f.Deps))
	case opIndex:
		d, err := parseDoc(args[0])
		if err != nil {
			return nil, err
		}
		return json.Marshal(d.Index())
	case opPlan:
		return plan(args[0])
	case opRankBetween:
		r, err := rank.Between(string(args[0]), string(args[1]))
		if err != nil {
			return nil, err
		}
		return appendString(nil, r), nil
	case opRankNBetween:
		rs, err := rank.NBetween(string(args[0]), string(args[1]), int(ints[0]))
		if err != nil {
			return nil, err
		}
		return json.Marshal(nonNil(rs))
	case opCanonical:
		d, err := parseDoc(args[0])
		if err != nil {
			return nil, err
		}
		return d.MarshalJSON()
	case opCanonicalValue:
		// RFC 8785 of any JSON value: the bytes kbcore writes (invalid
		// JSON, a duplicate key or a lone surrogate is an error).
		return kbcore.Canonical(args[0])
	case opWindowOpen:
		d, err := parseDoc(args[0])
		if err != nil {
			return nil, err
		}
		if ints[0] < 0 {
			return nil, fmt.Errorf("kbcore: window seq %d is negative", ints[0])
		}
		s.next++
		s.windows[s.next] = kbcore.NewWindow(d, ints[0])
		return strconv.AppendInt(nil, s.next, 10), nil
	case opWindowLocal, opWindowEcho, opWindowAck, opWindowReject, opWindowSnapshot, opWindowUndo, opWindowRedo, opWindowState, opWindowClose:
		w, ok := s.windows[ints[0]]
		if !ok {
			return nil, fmt.Errorf("kbcore: no open window %d", ints[0])
		}
		if op == opWindowClose {
			delete(s.windows, ints[0])
			return []byte("null"), nil
		}
		if op == opWindowState {
			return windowState(w)
		}
		acts, err := windowEvent(w, op, ints[1], args)
		if err != nil {
			return nil, err
		}
		return marshalActions(acts), nil
	}
	return nil, fmt.Errorf("kbcore: unknown operation %d", op)
}

// apply is Reference.Apply: the new canonical document, the inverses as
// {type, payload} and the whole page's index, or the rejection.
func apply(doc, cmd []byte) ([]byte, error) {
	d, err := parseDoc(doc)
	if err != nil {
		return nil, err
	}
	c, unshaped, err := kbcore.ReadCommand(cmd)
	if err != nil {
		return nil, fmt.Errorf("cmd: %w", err)
	}
	if unshaped != "" {
		return marshalObject("rejected", kbcore.RejectUnshaped(d, c.Type, unshaped))
	}
	res := kbcore.Apply(d, c)
	if res.Rejected != nil {
		return marshalObject("rejected", res.Rejected)
	}
	out, err := res.Doc.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b := append(make([]byte, 0, len(out)+64), `{"doc":`...)
	b = append(b, out...)
	b = append(b, `,"inverse":[`...)
	for i, inv := range res.Inverse {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = appendString(b, inv.Type)
		b = append(b, `,"payload":`...)
		b = appendRaw(b, inv.Payload)
		b = append(b, '}')
	}
	idx, err := json.Marshal(res.Doc.Index())
	if err != nil {
		return nil, err
	}
	b = append(b, `],"index":`...)
	b = append(b, idx...)
	return append(b, '}'), nil
}

// appendRaw appends a payload the reducer made (valid JSON), compacted;
// null for none.
func appendRaw(b, raw []byte) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return append(b, "null"...)
	}
	return append(b, buf.Bytes()...)
}

// parseCommand reads {id, type, payload} as the reference adapter does
// (unknown fields ignored, payload kept as it was written).
func parseCommand(b []byte) (kbcore.Command, error) {
	var c kbcore.Command
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("cmd: %w", err)
	}
	return c, nil
}

// plan is Reference.Plan: {workspace, pages, page, cmd} in, the effects
// and the touched pages' documents (or the rejection) out.
func plan(req []byte) ([]byte, error) {
	var r struct {
		Workspace string            `json:"workspace"`
		Pages     []json.RawMessage `json:"pages"`
		Page      string            `json:"page"`
		Cmd       json.RawMessage   `json:"cmd"`
	}
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if len(r.Cmd) == 0 {
		return nil, errors.New("plan: cmd is missing")
	}
	docs := make([]kbcore.Doc, 0, len(r.Pages))
	for i, raw := range r.Pages {
		d, err := parseDoc(raw)
		if err != nil {
			return nil, fmt.Errorf("pages[%d]: %w", i, err)
		}
		docs = append(docs, d)
	}
	c, unshaped, err := kbcore.ReadCommand(r.Cmd)
	if err != nil {
		return nil, fmt.Errorf("cmd: %w", err)
	}
	if unshaped != "" {
		return marshalObject("rejected", kbcore.PlanUnshaped(docs, r.Page, c.Type, unshaped))
	}
	p := kbcore.PlanCommand(kbcore.NewMemKB(docs...), r.Workspace, kbcore.Envelope{
		ID: c.ID, PageID: r.Page, Type: c.Type, Payload: c.Payload})
	if p.Rejected != nil {
		return marshalObject("rejected", p.Rejected)
	}
	type effect struct {
		Page  string         `json:"page"`
		Cmd   kbcore.Command `json:"cmd"`
		Cause string         `json:"cause,omitempty"`
	}
	effects := make([]effect, 0, len(p.Effects))
	for _, e := range p.Effects {
		effects = append(effects, effect{e.PageID, e.Cmd, e.Cause})
	}
	pages := make(map[string]json.RawMessage, len(p.Docs))
	for id, d := range p.Docs {
		if pages[id], err = d.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	return marshalObject("effects", effects, "pages", pages)
}

// windowEvent delivers one event to w. The args of each event: local
// (cmd), echo (seq in ints[1]; cmd), ack (seq in ints[1]; id), reject
// (id, code), snapshot (doc,
// outcomes or empty; seq in ints[1]), undo and redo (ids as a JSON list).
func windowEvent(w *kbcore.Window, op int, seq int64, args [4][]byte) ([]kbcore.Action, error) {
	switch op {
	case opWindowLocal, opWindowEcho:
		c, err := parseCommand(args[0])
		if err != nil {
			return nil, err
		}
		if op == opWindowLocal {
			return w.Local(c), nil
		}
		return w.Echo(seq, c), nil
	case opWindowAck:
		if len(args[0]) == 0 {
			return nil, errors.New("kbcore: ack needs id and seq")
		}
		return w.Ack(string(args[0]), seq), nil
	case opWindowReject:
		if len(args[0]) == 0 || len(args[1]) == 0 {
			return nil, errors.New("kbcore: reject needs id and code")
		}
		return w.Reject(string(args[0]), string(args[1])), nil
	case opWindowSnapshot:
		d, err := parseDoc(args[0])
		if err != nil {
			return nil, fmt.Errorf("snapshot.doc: %w", err)
		}
		var outcomes map[string]kbcore.Outcome
		if len(args[1]) > 0 {
			if err := kbcore.DecodeStrict(args[1], &outcomes); err != nil {
				return nil, fmt.Errorf("snapshot.outcomes: %w", err)
			}
		}
		return w.Snapshot(d, seq, outcomes), nil
	default:
		var ids []string
		if err := kbcore.DecodeStrict(args[0], &ids); err != nil {
			return nil, fmt.Errorf("ids: %w", err)
		}
		if op == opWindowUndo {
			return w.Undo(ids), nil
		}
		return w.Redo(ids), nil
	}
}

// windowState is {seq, pending, rendered, server}.
func windowState(w *kbcore.Window) ([]byte, error) {
	rendered, err := w.Rendered().MarshalJSON()
	if err != nil {
		return nil, err
	}
	server, err := w.Server().MarshalJSON()
	if err != nil {
		return nil, err
	}
	b := append(make([]byte, 0, len(rendered)+len(server)+64), `{"seq":`...)
	b = strconv.AppendInt(b, w.Seq(), 10)
	b = append(b, `,"pending":[`...)
	for i, c := range w.Pending() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, c.ID)
	}
	b = append(b, `],"rendered":`...)
	b = append(b, rendered...)
	b = append(b, `,"server":`...)
	b = append(b, server...)
	return append(b, '}'), nil
}

// marshalActions writes the actions as spec/window.yaml spells them.
func marshalActions(acts []kbcore.Action) []byte {
	b := []byte{'['}
	for i, a := range acts {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, a.String())
	}
	return append(b, ']')
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it (printable ASCII without " \\ < > & is written as is).
func appendString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// marshalObject writes {k1: v1, k2: v2, ...} with the keys in the order
// given.
func marshalObject(kv ...any) ([]byte, error) {
	b := []byte{'{'}
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, kv[i].(string))
		b = append(b, ':')
		v, err := json.Marshal(kv[i+1])
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

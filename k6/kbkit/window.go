package kbkit

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/grafana/sobek"
	"go.k6.io/k6/metrics"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/loadgen/editor"
	lgmetrics "github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/workload"
)

// Window is one open page of a VU, as JS sees it (kbkit.openWindow, or
// editor.windows): a measured window (loadgen/editor, the editor of
// kbkit loadgen too) whose commands are posted one at a time and waited
// for, as k6 calls are, while its echoes are applied on its own
// goroutine. Its samples become k6 samples (tap).
type Window struct {
	root *RootModule
	mi   *ModuleInstance
	ew   *editor.Window
	base *metrics.TagSet // the VU's tags when the window opened

	// The workloads' state (only the VU's goroutine touches them).
	rng *rand.Rand
	cur workload.Cursor
}

// result is what a command call returns to JS.
func result(o editor.Outcome) map[string]any {
	out := map[string]any{"type": o.Type, "id": o.ID, "committed": o.Committed}
	switch {
	case o.Committed:
		out["seq"] = o.Seq
	case o.Refused != "":
		out["refused"] = o.Refused
	case o.Rejected != "":
		out["rejected"] = o.Rejected
	case o.Err != nil:
		out["error"] = o.Err.Error()
	}
	return out
}

// tap turns the window's samples into k6 samples, tagged with the VU's
// tags (those of the window that issued the command, for its echoes),
// the workload, and the command type, rejection code or error kind.
func (w *Window) tap(s editor.Sample) {
	r, m := w.root, w.mi.m
	base := w.base
	if s.Origin != nil {
		if o, ok := s.Origin.Data().(*Window); ok {
			base = o.base
		}
	}
	tags := base.With("workload", s.Workload)
	if s.Type != "" {
		tags = tags.With("type", s.Type)
	}
	switch s.Name {
	case lgmetrics.Commit:
		r.latency(m.commit, tags, s.At, s.Latency)
	case lgmetrics.Echo:
		r.latency(m.echo, tags, s.At, s.Latency)
	case lgmetrics.Fanout:
		r.latency(m.fanout, tags, s.At, s.Latency)
	case lgmetrics.Convergence:
		r.latency(m.convergence, tags, s.At, s.Latency)
	case editor.Rejection:
		r.count(m.rejections, tags.With("code", s.Code), s.At, 1)
	case editor.Error:
		r.count(m.failures, tags.With("kind", s.Kind), s.At, 1)
	case editor.Refetch:
		r.count(m.refetches, tags, s.At, 1)
	case editor.Reconnect:
		r.count(m.reconnects, tags, s.At, 1)
	}
}

// ---- commands ----

// local issues one command drawn by build from the rendered page and
// sends it. wl tags its samples.
func (w *Window) local(wl string, build func(id string, doc kbcore.Doc) kbcore.Command) (map[string]any, error) {
	if w.ew.Closed() {
		return nil, editor.ErrClosed
	}
	defer w.mi.flush()
	w.root.begin()
	id := uuid.NewString()
	out := w.ew.Local(w.mi.vu.Context(), wl, time.Now(), func(doc kbcore.Doc) kbcore.Command { return build(id, doc) })
	return result(out), nil
}

func (w *Window) command(typ string, payload map[string]any) (map[string]any, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	return w.local("script", func(id string, _ kbcore.Doc) kbcore.Command {
		return kbcore.Command{ID: id, Type: typ, Payload: b}
	})
}

// Type types text at the end of node, one keystroke (edit-text) at a
// time, each committed before the next, and returns the counts of the
// keystrokes' outcomes.
func (w *Window) Type(node, text string) (map[string]any, error) {
	out := map[string]any{"keystrokes": 0, "committed": 0, "rejected": 0, "refused": 0, "errors": 0}
	inc := func(k string) { out[k] = out[k].(int) + 1 }
	for _, ch := range text {
		res, err := w.local("script", func(id string, doc kbcore.Doc) kbcore.Command {
			n, _ := doc.Node(node)
			b, _ := json.Marshal(map[string]any{"node": node, "text": n.Text + string(ch)})
			return kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: b}
		})
		if err != nil {
			return nil, err
		}
		inc("keystrokes")
		switch {
		case res["committed"] == true:
			inc("committed")
		case res["rejected"] != nil:
			inc("rejected")
		case res["refused"] != nil:
			inc("refused")
		default:
			inc("errors")
		}
	}
	return out, nil
}

// SetText replaces node's text with one edit-text.
func (w *Window) SetText(node, text string) (map[string]any, error) {
	return w.command(kbcore.TypeEditText, map[string]any{"node": node, "text": text})
}

// CreateAfter creates a node after node after (null: first on the page)
// with text; the result's node is its id.
func (w *Window) CreateAfter(after sobek.Value, text string) (map[string]any, error) {
	p := map[string]any{"text": text}
	if a, err := optID("createAfter", "after", after); err != nil {
		return nil, err
	} else if a != nil {
		p["after"] = *a
	}
	out, err := w.command(kbcore.TypeCreateAfter, p)
	if out != nil {
		out["node"] = out["id"]
	}
	return out, err
}

// Move moves node under parent (null: the page) after sibling after
// (null: first).
func (w *Window) Move(node string, parent, after sobek.Value) (map[string]any, error) {
	pa, err := optID("move", "parent", parent)
	if err != nil {
		return nil, err
	}
	af, err := optID("move", "after", after)
	if err != nil {
		return nil, err
	}
	return w.command(kbcore.TypeMoveNode, map[string]any{"node": node, "parent": pa, "after": af})
}

// Indent makes node the last child of its previous sibling (Tab).
func (w *Window) Indent(node string) (map[string]any, error) {
	return w.command(kbcore.TypeIndent, map[string]any{"node": node})
}

// Outdent moves node after its parent (Shift-Tab).
func (w *Window) Outdent(node string) (map[string]any, error) {
	return w.command(kbcore.TypeOutdent, map[string]any{"node": node})
}

// Delete deletes node and its subtree.
func (w *Window) Delete(node string) (map[string]any, error) {
	return w.command(kbcore.TypeDelete, map[string]any{"node": node})
}

// Undo reverts the window's last own step; Redo the last undo.
func (w *Window) Undo() (map[string]any, error) { return w.step(w.ew.Undo) }

// Redo reverts the last undo.
func (w *Window) Redo() (map[string]any, error) { return w.step(w.ew.Redo) }

func (w *Window) step(fn func(context.Context, string, time.Time, []string) editor.Outcome) (map[string]any, error) {
	if w.ew.Closed() {
		return nil, editor.ErrClosed
	}
	defer w.mi.flush()
	w.root.begin()
	ids := make([]string, 32) // a step reverts at most a subtree's worth of commands
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	return result(fn(w.mi.vu.Context(), "script", time.Now(), ids)), nil
}

// WaitConverged waits until the window has applied every command its
// page is known (in this process) to have and has nothing pending,
// records kbkit_convergence and returns the wait in ms; past timeout (ms
// or a duration such as "5s", default 10s) it counts a not-converged
// error and throws.
func (w *Window) WaitConverged(timeout sobek.Value) (float64, error) {
	d, err := jsDuration("waitConverged", timeout, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer w.mi.flush()
	start := time.Now()
	if err := w.ew.Converge(start, start.Add(d)); err != nil {
		return 0, err
	}
	return metrics.D(time.Since(start)), nil
}

// Close closes the window's subscription.
func (w *Window) Close() {
	w.ew.Close()
	w.mi.flush()
}

// Nodes lists the ids of the rendered page's nodes in document order.
func (w *Window) Nodes() []string {
	var out []string
	w.ew.Client().Rendered().Walk(func(n kbcore.Node) bool { out = append(out, n.ID); return true })
	return out
}

// Text is node's rendered text ("" when there is no such node).
func (w *Window) Text(node string) string {
	n, _ := w.ew.Client().Rendered().Node(node)
	return n.Text
}

// Seq is the seq of the last event the window applied.
func (w *Window) Seq() int64 { return w.ew.Client().Seq() }

// Page is the id of the window's page.
func (w *Window) Page() string { return w.ew.Page().ID }

// ---- helpers ----

// optID reads a node id that may be null or undefined.
func optID(fn, name string, v sobek.Value) (*string, error) {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return nil, nil
	}
	s, ok := v.Export().(string)
	if !ok {
		return nil, fmt.Errorf("kbkit: %s: %s must be a node id (a string) or null, not %s", fn, name, v.String())
	}
	return &s, nil
}

// jsDuration reads a duration given as ms or as a string such as "5s".
func jsDuration(fn string, v sobek.Value, def time.Duration) (time.Duration, error) {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return def, nil
	}
	switch x := v.Export().(type) {
	case int64:
		if x > 0 {
			return time.Duration(x) * time.Millisecond, nil
		}
	case float64:
		if x > 0 {
			return time.Duration(x * float64(time.Millisecond)), nil
		}
	case string:
		if d, err := time.ParseDuration(x); err == nil && d > 0 {
			return d, nil
		}
	}
	return 0, fmt.Errorf("kbkit: %s: timeout %s: want milliseconds or a duration such as \"5s\"", fn, v.String())
}

package kbkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/grafana/sobek"
	"go.k6.io/k6/metrics"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	lgmetrics "github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/workload"
)

// Window is one open page of a VU, as JS sees it (kbkit.openWindow, or
// editor.windows): a client.Window whose commands are posted one at a
// time and waited for, as k6 calls are, while its echoes are applied on
// its own goroutine.
type Window struct {
	root *RootModule
	mi   *ModuleInstance
	cw   *client.Window
	pg   *page
	base *metrics.TagSet // the VU's tags when the window opened
	// tags are base with the workload of the last command (for the
	// window's own counters).
	tags   atomic.Pointer[metrics.TagSet]
	closed atomic.Bool

	// The workloads' state (only the VU's goroutine touches them).
	rng *rand.Rand
	cur workload.Cursor
}

// result is what a command call returns to JS.
func result(typ, id string) map[string]any {
	return map[string]any{"type": typ, "id": id, "committed": false}
}

// ---- client.WindowObserver: the reader goroutine's events ----

// observer is the window as its client.Window's observer (a separate
// type, so that JS does not see these methods).
type observer Window

// Subscribed counts connects, and reconnects.
func (w *observer) Subscribed(reconnect bool) {
	now := time.Now()
	w.mi.rec.Count(lgmetrics.Connects, now, 1)
	if reconnect {
		w.mi.rec.Count(lgmetrics.Reconnects, now, 1)
		w.root.count(w.mi.m.reconnects, w.tags.Load(), now, 1)
	}
}

// Snapshot counts refetches.
func (w *observer) Snapshot(seq int64, refetch bool) {
	w.pg.saw(seq)
	if refetch {
		now := time.Now()
		w.mi.rec.Count(lgmetrics.Refetches, now, 1)
		w.root.count(w.mi.m.refetches, w.tags.Load(), now, 1)
	}
}

// Attempt and Rejected: Send's answers are measured by post.
func (w *observer) Attempt(client.Attempt)  {}
func (w *observer) Rejected(string, string) {}

// Retry counts resends.
func (w *observer) Retry() { w.mi.rec.Count(lgmetrics.Retries, time.Now(), 1) }

// Error counts a failure by kind.
func (w *observer) Error(kind string) {
	now := time.Now()
	w.mi.rec.Error(kind, now)
	w.root.count(w.mi.m.failures, w.tags.Load().With("kind", kind), now, 1)
}

// Event measures echo (at the window that issued the command) and
// fan-out (at every other window of the page in this process).
func (w *observer) Event(ev client.Event, applied bool, now time.Time) {
	r := w.root
	w.mi.rec.Count(lgmetrics.Echoes, now, 1)
	w.pg.saw(ev.Seq)
	if !applied {
		return
	}
	if v, ok := r.stamps.Load(ev.Cmd.ID); ok {
		st := v.(*stamp)
		if st.origin == (*Window)(w) {
			w.mi.rec.Latency(lgmetrics.Echo, now, now.Sub(st.start))
			r.latency(w.mi.m.echo, st.tags, now, now.Sub(st.start))
			st.echoed.Store(true)
		} else {
			w.mi.rec.Latency(lgmetrics.Fanout, now, now.Sub(st.start))
			r.latency(w.mi.m.fanout, st.tags, now, now.Sub(st.start))
		}
		if st.left.Add(-1) <= 0 && st.echoed.Load() {
			r.stamps.Delete(ev.Cmd.ID)
		}
	}
	if ev.Cmd.Type == kbcore.TypeRenamePage {
		var p kbcore.RenamePage
		if json.Unmarshal(ev.Cmd.Payload, &p) == nil && p.Title != nil {
			r.setTitle(w.pg.id, *p.Title)
		}
	}
}

// ---- commands ----

// send posts the envelopes a call issued, in order, each measured and
// stamped for its echoes; the result is the last one's.
func (w *Window) send(wl string, envs []kbcore.Envelope, start time.Time) map[string]any {
	out := result("", "")
	for _, env := range envs {
		out = w.post(wl, env, start)
		if out["committed"] != true {
			break
		}
	}
	return out
}

func (w *Window) post(wl string, env kbcore.Envelope, start time.Time) map[string]any {
	r, rec := w.root, w.mi.rec
	tags := w.base.With("workload", wl).With("type", env.Type)
	out := result(env.Type, env.ID)
	st := &stamp{start: start, origin: w, tags: tags}
	st.left.Store(int32(r.windowsOn(w.pg)))
	r.stamps.Store(env.ID, st)
	seq, rej, err := w.cw.Send(w.mi.vu.Context(), env)
	now := time.Now()
	switch {
	case errors.Is(err, client.ErrNotPending):
		r.stamps.Delete(env.ID)
		out["refused"] = "not-pending"
	case err != nil:
		r.stamps.Delete(env.ID)
		kind := errorKind(err)
		rec.Error(kind, now)
		r.count(w.mi.m.failures, tags.With("kind", kind), now, 1)
		out["error"] = err.Error()
	case rej != nil:
		r.stamps.Delete(env.ID)
		rec.Rejection(rej.Code, now)
		r.count(w.mi.m.rejections, tags.With("code", rej.Code), now, 1)
		out["rejected"] = rej.Code
	default:
		w.pg.saw(seq)
		rec.Count(lgmetrics.Committed, now, 1)
		rec.Latency(lgmetrics.Commit, now, now.Sub(start))
		r.latency(w.mi.m.commit, tags, now, now.Sub(start))
		out["committed"], out["seq"] = true, seq
	}
	return out
}

// local issues one command drawn by build from the rendered page and
// sends it. wl tags its samples.
func (w *Window) local(wl string, build func(id string, doc kbcore.Doc) kbcore.Command) (map[string]any, error) {
	if w.closed.Load() {
		return nil, errors.New("kbkit: the window is closed")
	}
	defer w.mi.flush()
	w.root.begin()
	w.tags.Store(w.base.With("workload", wl))
	id := uuid.NewString()
	start := time.Now()
	var typ string
	env, code, ok := w.cw.Local(func(doc kbcore.Doc) kbcore.Command {
		c := build(id, doc)
		typ = c.Type
		return c
	})
	w.mi.rec.Count(lgmetrics.Commands, start, 1)
	if !ok {
		w.mi.rec.Count(lgmetrics.LocalRejections, start, 1)
		out := result(typ, id)
		out["refused"] = code
		return out, nil
	}
	return w.post(wl, env, start), nil
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
func (w *Window) Undo() (map[string]any, error) { return w.step(w.cw.Undo) }

// Redo reverts the last undo.
func (w *Window) Redo() (map[string]any, error) { return w.step(w.cw.Redo) }

func (w *Window) step(fn func([]string) ([]kbcore.Envelope, string)) (map[string]any, error) {
	if w.closed.Load() {
		return nil, errors.New("kbkit: the window is closed")
	}
	defer w.mi.flush()
	w.root.begin()
	ids := make([]string, 32) // a step reverts at most a subtree's worth of commands
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	start := time.Now()
	envs, code := fn(ids)
	w.mi.rec.Count(lgmetrics.Commands, start, 1)
	if len(envs) == 0 {
		w.mi.rec.Count(lgmetrics.LocalRejections, start, 1)
		out := result("", "")
		out["refused"] = code
		return out, nil
	}
	return w.send("script", envs, start), nil
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
	if err := w.converge(start, start.Add(d)); err != nil {
		return 0, err
	}
	return metrics.D(time.Since(start)), nil
}

// converge waits for the window to reach its page's head and records
// the time since from.
func (w *Window) converge(from, deadline time.Time) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for !w.cw.Converged(w.pg.head.Load()) {
		select {
		case <-w.cw.Changed():
		case <-time.After(20 * time.Millisecond):
		case <-timer.C:
			now := time.Now()
			w.mi.rec.Error("not-converged", now)
			w.root.count(w.mi.m.failures, w.tags.Load().With("kind", "not-converged"), now, 1)
			return fmt.Errorf("kbkit: window on page %s not converged after %s (at seq %d, page head %d)",
				w.pg.id, time.Since(from).Round(time.Millisecond), w.cw.Seq(), w.pg.head.Load())
		}
	}
	now := time.Now()
	w.mi.rec.Latency(lgmetrics.Convergence, now, now.Sub(from))
	w.root.latency(w.mi.m.convergence, w.tags.Load(), now, now.Sub(from))
	return nil
}

// Close closes the window's subscription.
func (w *Window) Close() {
	w.shut()
	w.mi.flush()
}

// shut closes the window (from any goroutine: it flushes nothing).
func (w *Window) shut() {
	if w.closed.Swap(true) {
		return
	}
	w.cw.Close()
	w.root.forget(w)
}

// Nodes lists the ids of the rendered page's nodes in document order.
func (w *Window) Nodes() []string {
	var out []string
	w.cw.Rendered().Walk(func(n kbcore.Node) bool { out = append(out, n.ID); return true })
	return out
}

// Text is node's rendered text ("" when there is no such node).
func (w *Window) Text(node string) string {
	n, _ := w.cw.Rendered().Node(node)
	return n.Text
}

// Seq is the seq of the last event the window applied.
func (w *Window) Seq() int64 { return w.cw.Seq() }

// Page is the id of the window's page.
func (w *Window) Page() string { return w.pg.id }

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

func errorKind(err error) string {
	var ce *client.Error
	switch {
	case errors.As(err, &ce):
		return ce.Code
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "network"
}

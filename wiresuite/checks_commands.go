package wiresuite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/subspace/kbkit/kbcore"
)

// commandChecks are one check per command type (spec/README.md 2.2): each
// sends commands of its type over kb.command and checks the answer's seq,
// the event every kb.onPage subscription of a touched page gets, and
// kb.page's document, byte for byte against the canonical encoding of the
// fold the reference reducer and planner (kbcore) compute. Table and code
// nodes are in the documents wherever a type carries them, so a server
// that loses cells or outputs anywhere on the way fails.
func commandChecks() []Check {
	return []Check{
		{"protocol/command-create-page", "create-page {title, dir} round-trips: seq 1, the replayed event, kb.page's canonical doc (2.2, 4.1, 4.2, 4.4)", checkCommandCreatePage},
		{"protocol/command-create-after", "create-after of text, code (outputs []) and table (cells {}) nodes, after a node, under a parent, with a rank hint, round-trips (2.2, 4)", checkCommandCreateAfter},
		{"protocol/command-edit-text", "edit-text of a text and a code node (non-ASCII text) round-trips (2.2, 4)", checkCommandEditText},
		{"protocol/command-move-node", "move-node of a subtree under another parent and back to the top level round-trips (2.2, 4)", checkCommandMoveNode},
		{"protocol/command-indent", "indent makes a node the last child of its previous sibling, round-trip (2.2, 4)", checkCommandIndent},
		{"protocol/command-outdent", "outdent leaves the following siblings in place (logical outdenting), round-trip (2.2, 4)", checkCommandOutdent},
		{"protocol/command-delete", "delete of a subtree holding a table with cells and a code node with outputs round-trips (2.2, 4)", checkCommandDelete},
		{"protocol/command-restore", "restore of a deleted subtree brings back kinds, ranks, cells and outputs, round-trip (2.2, 4)", checkCommandRestore},
		{"protocol/command-set-outputs", "set-outputs on a code node (several outputs, then none) round-trips (2.2, 4)", checkCommandSetOutputs},
		{"protocol/command-set-cell", "set-cell on a table node (values, a formula, a deletion with \"\") round-trips (2.2, 4)", checkCommandSetCell},
		{"protocol/command-set-aliases", "set-aliases (normalised, duplicates dropped, then none) round-trips (2.2, 4)", checkCommandSetAliases},
		{"protocol/command-rename-page", "rename-page with and without aliases round-trips (2.2, 4)", checkCommandRenamePage},
		{"protocol/command-merge-page", "merge-page moves the content (a table, a code node) to the target: both pages' events and docs are the planner's (2.2, 4; planner.md 2)", checkCommandMergePage},
		{"protocol/command-restore-page", "restore-page undoes a merge on both pages: events and docs are the planner's (2.2, 4; planner.md 2)", checkCommandRestorePage},
	}
}

// roundTrip is the state of one command check: the pages it made, each
// watched by a kb.onPage subscription on a socket of its own (events of
// two pages may interleave in any order).
type roundTrip struct {
	e     *Env
	pages map[string]*page
	ws    map[string]*WS
}

func newRoundTrip(e *Env) *roundTrip {
	return &roundTrip{e: e, pages: map[string]*page{}, ws: map[string]*WS{}}
}

func (rt *roundTrip) Close() {
	for _, w := range rt.ws {
		w.Close()
	}
}

func (rt *roundTrip) kb() kbcore.MemKB {
	docs := make([]kbcore.Doc, 0, len(rt.pages))
	for _, p := range rt.pages {
		docs = append(docs, p.doc)
	}
	return kbcore.NewMemKB(docs...)
}

// newPage makes a page with create-page over the round trip.
func (rt *roundTrip) newPage(ctx context.Context, dir string) (*page, error) {
	p, err := rt.createPage(ctx, dir)
	return p, rt.e.setupFailed(setupPage, err)
}

// createPage is newPage without the skip of setup.go.
func (rt *roundTrip) createPage(ctx context.Context, dir string) (*page, error) {
	id := newID()
	d, _ := kbcore.NewDoc(kbcore.Page{ID: id}, nil)
	p := &page{id: id, title: "protocol check " + id, doc: d, cmds: map[int64]kbcore.Command{}}
	rt.pages[id] = p
	payload := map[string]any{"title": p.title}
	if dir != "" {
		payload["dir"] = dir
	}
	if err := rt.send(ctx, p, "create-page", payload); err != nil {
		return nil, err
	}
	return p, nil
}

// watch subscribes to kb.onPage of p and checks the replay of its log.
func (rt *roundTrip) watch(ctx context.Context, p *page) error {
	w, err := rt.e.subscribedTo(ctx, 1, p, nil)
	if err != nil {
		return err
	}
	rt.ws[p.id] = w
	return step("kb.onPage's replay", w.events(ctx, 1, p, 1, p.seq))
}

// send posts one command of page p over kb.command and checks the round
// trip: the reference planner's plan on the check's pages gives the
// expected seqs, events and documents of every page it touches.
func (rt *roundTrip) send(ctx context.Context, p *page, typ string, payload any) error {
	what := fmt.Sprintf("%s %s", typ, excerpt(rawJSON(payload), 200))
	env := kbcore.Envelope{ID: newID(), DeviceID: rt.e.DeviceID, PageID: p.id, Type: typ, Payload: rawJSON(payload)}
	plan := kbcore.PlanCommand(rt.kb(), rt.e.WorkspaceID, env)
	if plan.Rejected != nil {
		return fmt.Errorf("the check is wrong: the reference planner rejects %s: %s", what, plan.Rejected.Code)
	}
	for _, eff := range plan.Effects {
		if rt.pages[eff.PageID] == nil {
			return fmt.Errorf("the check is wrong: %s touches page %s, which it did not make", what, eff.PageID)
		}
	}
	r, err := rt.e.mutate(ctx, "kb.command", rawJSON(env))
	if err != nil {
		return err
	}
	seq, dup, err := seqOf(r)
	if err != nil {
		return step(what, err)
	}
	if seq != p.seq+1 || dup {
		return step(what, r.fail(fmt.Sprintf(`{"seq":%d}`, p.seq+1), excerpt(r.Body, 200),
			"a command of a page at seq %d (no other writer) commits as seq %d", p.seq, p.seq+1))
	}
	touched := []*page{}
	from := map[string]int64{}
	for _, eff := range plan.Effects {
		q := rt.pages[eff.PageID]
		if _, ok := from[q.id]; !ok {
			from[q.id] = q.seq + 1
			touched = append(touched, q)
		}
		q.seq++
		q.cmds[q.seq] = eff.Cmd
	}
	for _, q := range touched {
		q.doc = plan.Docs[q.id]
		if w := rt.ws[q.id]; w != nil {
			if err := step(what+": kb.onPage", w.events(ctx, 1, q, from[q.id], q.seq)); err != nil {
				return err
			}
		}
		if err := step(what+": kb.page", rt.e.sameDoc(ctx, q)); err != nil {
			return err
		}
	}
	return nil
}

// sameDoc checks that kb.page of p answers p's seq and, byte for byte, the
// canonical encoding of p's document.
func (e *Env) sameDoc(ctx context.Context, p *page) error {
	want, err := p.doc.MarshalJSON()
	if err != nil {
		return err
	}
	s, err := e.snapshot(ctx, p.id, nil)
	if err != nil {
		return err
	}
	if s.seq != p.seq {
		return s.r.fail(fmt.Sprintf("seq %d", p.seq), fmt.Sprintf("seq %d", s.seq), "kb.page's seq is the page's last command's")
	}
	return s.isDoc(want, "spec/README.md 1, 2.2")
}

// watched makes a page with create-page and subscribes to it.
// onWatched runs fn with a round trip on a fresh page it watches.
func onWatched(ctx context.Context, e *Env, fn func(rt *roundTrip, p *page) error) error {
	rt := newRoundTrip(e)
	defer rt.Close()
	p, err := rt.watched(ctx)
	if err != nil {
		return err
	}
	return fn(rt, p)
}

func (rt *roundTrip) watched(ctx context.Context) (*page, error) {
	p, err := rt.newPage(ctx, "")
	if err != nil {
		return nil, step("setup", err)
	}
	return p, step("setup", rt.watch(ctx, p))
}

// sendAll sends commands of page p in order.
func (rt *roundTrip) sendAll(ctx context.Context, p *page, cmds ...cmd) error {
	for _, c := range cmds {
		if err := rt.send(ctx, p, c.typ, c.payload); err != nil {
			return err
		}
	}
	return nil
}

type cmd struct {
	typ     string
	payload map[string]any
}

func node(id, text string, at ...string) cmd {
	pl := map[string]any{"node": id, "text": text}
	for i := 0; i+1 < len(at); i += 2 {
		pl[at[i]] = at[i+1]
	}
	return cmd{"create-after", pl}
}

// byteRules is text that meets every escaping rule of canonical JSON
// (RFC 8785, spec/canonical.json): HTML characters, quotes, backslashes,
// U+2028/9, control characters, DEL, non-BMP text, a combining mark,
// right-to-left text. A server that escapes any of them differently fails
// the byte-for-byte document checks.
const byteRules = "cash: $610,000 <b>&amp;</b> \"q\" \\ / \u2028\u2029 \t\n\x01\x1f\x7f 😀 e\u0301 \u05e9\u05dc\u05d5\u05dd \u202eRTL\u202c"

// richTree is a subtree of every kind: r1 holding a table with cells and a
// code node with outputs, r1's child s1 holding a text node.
func richTree(prefix string) []cmd {
	return []cmd{
		node(prefix+"r1", byteRules),
		node(prefix+"t1", "", "parent", prefix+"r1", "kind", "table"),
		{"set-cell", map[string]any{"node": prefix + "t1", "cell": "A1", "value": "10"}},
		{"set-cell", map[string]any{"node": prefix + "t1", "cell": "B1", "value": "=A1*2"}},
		node(prefix+"c1", "print(1)", "after", prefix+"t1", "kind", "code"),
		{"set-outputs", map[string]any{"node": prefix + "c1", "outputs": []any{
			map[string]any{"mime": "text/plain", "data": "1"}, map[string]any{"mime": "text/html", "data": "<b>1</b>"}}}},
		node(prefix+"s1", "nested \U0001F469\u200d\U0001F4BB <&>", "after", prefix+"c1"),
		node(prefix+"x1", "leaf", "parent", prefix+"s1"),
	}
}

func checkCommandCreatePage(ctx context.Context, e *Env) error {
	rt := newRoundTrip(e)
	defer rt.Close()
	p, err := rt.newPage(ctx, "protocol/checks")
	if err != nil {
		return err
	}
	return rt.watch(ctx, p)
}

func checkCommandCreateAfter(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		return rt.sendAll(ctx, p,
			node("n1", "first"),
			node("c1", "print(2)", "after", "n1", "kind", "code"),
			node("t1", "", "parent", "n1", "kind", "table"),
			node("n2", "second child", "after", "t1", "parent", "n1", "rank", "a1"),
			node("n0", "before all, rank hint ignored", "rank", "zzz"),
			node("n3", "text kind given", "after", "c1", "kind", "text"))
	})
}

func checkCommandEditText(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		return rt.sendAll(ctx, p,
			node("n1", "draft"),
			node("c1", "print(1)", "after", "n1", "kind", "code"),
			cmd{"edit-text", map[string]any{"node": "n1", "text": "Größe: 12 €, 東京 ✓ \"quoted\" \\ back"}},
			cmd{"edit-text", map[string]any{"node": "c1", "text": "for i in range(3):\n\tprint(i)"}},
			cmd{"edit-text", map[string]any{"node": "n1", "text": ""}})
	})
}

func checkCommandMoveNode(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		if err := rt.sendAll(ctx, p, richTree("")...); err != nil {
			return step("setup", err)
		}
		return rt.sendAll(ctx, p,
			node("n2", "target"),
			cmd{"move-node", map[string]any{"node": "s1", "parent": "n2", "after": nil}},
			cmd{"move-node", map[string]any{"node": "t1", "parent": "n2", "after": "s1"}},
			cmd{"move-node", map[string]any{"node": "r1", "parent": nil, "after": "n2"}},
			cmd{"move-node", map[string]any{"node": "c1", "parent": nil, "after": nil}})
	})
}

func checkCommandIndent(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		return rt.sendAll(ctx, p,
			node("n1", "one"), node("n2", "two", "after", "n1"), node("n3", "three", "after", "n2"),
			cmd{"indent", map[string]any{"node": "n2"}},
			cmd{"indent", map[string]any{"node": "n3"}})
	})
}

func checkCommandOutdent(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		return rt.sendAll(ctx, p,
			node("n1", "parent"), node("a", "a", "parent", "n1"), node("b", "b", "after", "a"), node("c", "c", "after", "b"),
			node("n2", "after the parent", "after", "n1"),
			cmd{"outdent", map[string]any{"node": "b"}})
	})
}

func checkCommandDelete(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		if err := rt.sendAll(ctx, p, richTree("")...); err != nil {
			return step("setup", err)
		}
		return rt.sendAll(ctx, p, cmd{"delete", map[string]any{"node": "x1"}}, cmd{"delete", map[string]any{"node": "r1"}})
	})
}

// inverse is the reference reducer's inverse of c on p, as a command to
// send (the undo a client would send).
func inverse(p *page, c cmd) ([]cmd, error) {
	res := kbcore.Apply(p.doc, kbcore.Command{ID: "probe", Type: c.typ, Payload: rawJSON(c.payload)})
	if res.Rejected != nil {
		return nil, fmt.Errorf("the check is wrong: the reference reducer rejects %s: %s", c.typ, res.Rejected.Code)
	}
	out := make([]cmd, 0, len(res.Inverse))
	for _, inv := range res.Inverse {
		var pl map[string]any
		if err := json.Unmarshal(inv.Payload, &pl); err != nil {
			return nil, err
		}
		out = append(out, cmd{inv.Type, pl})
	}
	return out, nil
}

func checkCommandRestore(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		if err := rt.sendAll(ctx, p, richTree("")...); err != nil {
			return step("setup", err)
		}
		del := cmd{"delete", map[string]any{"node": "r1"}}
		undo, err := inverse(p, del)
		if err != nil {
			return err
		}
		if err := rt.sendAll(ctx, p, node("n0", "stays"), del); err != nil {
			return step("setup", err)
		}
		// The undo, then a restore of a record given by hand: a table whose
		// cells come with it, under a restored node.
		return rt.sendAll(ctx, p, append(undo, cmd{"restore", map[string]any{"nodes": []any{
			map[string]any{"id": "t9", "parent": "x1", "rank": "a0", "text": "", "kind": "table", "cells": map[string]any{"C3": "=A1+1", "A1": "2"}},
			map[string]any{"id": "c9", "parent": "x1", "rank": "a1", "text": "1+1", "kind": "code",
				"outputs": []any{map[string]any{"mime": "text/plain", "data": "2"}}},
		}}})...)
	})
}

func checkCommandSetOutputs(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		return rt.sendAll(ctx, p,
			node("c1", "plot()", "kind", "code"),
			cmd{"set-outputs", map[string]any{"node": "c1", "outputs": []any{
				map[string]any{"mime": "text/plain", "data": "<Figure>"},
				map[string]any{"mime": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="},
				map[string]any{"mime": "text/plain", "data": ""}}}},
			cmd{"set-outputs", map[string]any{"node": "c1", "outputs": []any{map[string]any{"mime": "text/plain", "data": "ok"}}}},
			cmd{"set-outputs", map[string]any{"node": "c1", "outputs": []any{}}})
	})
}

func checkCommandSetCell(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		cell := func(c, v string) cmd { return cmd{"set-cell", map[string]any{"node": "t1", "cell": c, "value": v}} }
		return rt.sendAll(ctx, p,
			node("t1", "totals", "kind", "table"),
			cell("A1", "10"), cell("B1", "=A1*2"), cell("AB12", "Größe"), cell("ZZZ999999", "last"),
			cell("A1", "11"), cell("B1", ""))
	})
}

func checkCommandSetAliases(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		a, b := "alias "+newID(), "Café "+newID()
		return rt.sendAll(ctx, p,
			cmd{"set-aliases", map[string]any{"aliases": []any{a, "  " + b + " ", a}}},
			cmd{"set-aliases", map[string]any{"aliases": []any{b}}},
			cmd{"set-aliases", map[string]any{"aliases": []any{}}})
	})
}

func checkCommandRenamePage(ctx context.Context, e *Env) error {
	return onWatched(ctx, e, func(rt *roundTrip, p *page) error {
		return rt.sendAll(ctx, p,
			node("n1", "content stays"),
			cmd{"rename-page", map[string]any{"title": "protocol check renamed " + newID()}},
			cmd{"rename-page", map[string]any{"title": "  protocol check renamed again " + newID() + " ", "aliases": []any{"alias " + newID()}}})
	})
}

// merged makes a source page with a rich tree and a target with a node of
// its own, watches both, and merges the source into the target.
func merged(ctx context.Context, rt *roundTrip) (src, dst *page, merge cmd, err error) {
	if src, err = rt.watched(ctx); err != nil {
		return
	}
	if dst, err = rt.watched(ctx); err != nil {
		return
	}
	if err = step("setup", rt.sendAll(ctx, src, richTree("")...)); err != nil {
		return
	}
	if err = step("setup", rt.sendAll(ctx, dst, node("q1", "the target's own"),
		cmd{"set-aliases", map[string]any{"aliases": []any{"target alias " + newID()}}})); err != nil {
		return
	}
	if err = step("setup", rt.sendAll(ctx, src, cmd{"set-aliases", map[string]any{"aliases": []any{"source alias " + newID()}}})); err != nil {
		return
	}
	merge = cmd{"merge-page", map[string]any{"into": dst.id}}
	return src, dst, merge, nil
}

func checkCommandMergePage(ctx context.Context, e *Env) error {
	rt := newRoundTrip(e)
	defer rt.Close()
	src, _, merge, err := merged(ctx, rt)
	if err != nil {
		return err
	}
	return rt.send(ctx, src, merge.typ, merge.payload)
}

func checkCommandRestorePage(ctx context.Context, e *Env) error {
	rt := newRoundTrip(e)
	defer rt.Close()
	src, _, merge, err := merged(ctx, rt)
	if err != nil {
		return err
	}
	undo, err := inverse(src, merge)
	if err != nil {
		return err
	}
	if err := step("setup", rt.send(ctx, src, merge.typ, merge.payload)); err != nil {
		return err
	}
	if len(undo) != 1 || undo[0].typ != "restore-page" {
		return fmt.Errorf("the check is wrong: the inverse of merge-page is %d commands", len(undo))
	}
	return rt.sendAll(ctx, src, undo...)
}

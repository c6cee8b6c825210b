package fuzz

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// An input is a case without its expected side: Given, When or Steps.
// The reference fills in Then (or each step's expect), see expect.go.

// genCommandCase draws a command case: a document and one command.
func genCommandCase(s *Source, types []string) cases.Case {
	typ := Pick(s, types)
	doc, info := genCommandDoc(s, typ)
	self := cases.DefaultPage["id"].(string)
	g := cmdGen{types: types, doc: info, self: self, pages: []string{self, otherPage},
		titles: pageTitles, text: genNodeText}
	cmd := g.drawType(s, "c1", typ)
	return cases.Case{Given: map[string]any{"doc": doc}, When: map[string]any{"cmd": cmd}}
}

// genTokenizerCase draws a tokenizer case: node text or a formula.
func genTokenizerCase(s *Source) cases.Case {
	if s.Chance(30) {
		return cases.Case{When: map[string]any{"formula": genFormula(s)}}
	}
	return cases.Case{When: map[string]any{"text": genText(s)}}
}

// windowTypes are the commands a window script's local steps use; the
// window's rules (spec/window.md) do not depend on the command type, so a
// few that change, create and remove nodes are enough.
var windowTypes = []string{kbcore.TypeEditText, kbcore.TypeCreateAfter, kbcore.TypeDelete,
	kbcore.TypeIndent, kbcore.TypeMoveNode, kbcore.TypeOutdent}

// genWindowCase draws a window script. It runs the reference Window as it
// draws, so that echoes, rejections, snapshots and undos refer to the
// window's actual pending ids and seq most of the time.
func genWindowCase(s *Source) (cases.Case, error) {
	nodes, info := genNodes(s, 75, 4, genNodeText)
	givenDoc := map[string]any{"nodes": nodes}
	seq := int64(s.Intn(4))
	b, err := cases.ExpandDoc(givenDoc, cases.DefaultPage)
	if err != nil {
		return cases.Case{}, err
	}
	doc, err := kbcore.ParseDoc(b)
	if err != nil {
		return cases.Case{}, err
	}
	g := &windowGen{s: s, w: kbcore.NewWindow(doc, seq), info: info, page: pageMap(doc)}
	steps := []any{}
	s.List(85, 10, func(int) {
		if ev := g.step(); ev != nil {
			steps = append(steps, map[string]any{"event": ev})
		}
	})
	given := map[string]any{"doc": givenDoc}
	if seq != 0 {
		given["seq"] = float64(seq)
	}
	return cases.Case{Given: given, Steps: steps}, nil
}

// windowGen draws the steps of one window script.
type windowGen struct {
	s                     *Source
	w                     *kbcore.Window
	info                  docInfo
	page                  map[string]any
	local, foreign, undos int // ids minted so far
}

// step draws one event, delivers it to the window and returns it; nil
// when the drawn command cannot be read (the step is left out).
func (g *windowGen) step() map[string]any {
	s, w := g.s, g.w
	pending := w.Pending()
	switch k := s.Intn(6); {
	case k == 0 || len(pending) == 0 && k < 3:
		g.local++
		id := fmt.Sprintf("c%d", g.local)
		if dup := s.Chance(5); dup && len(pending) > 0 {
			id = pending[0].ID
		}
		cmd := cmdGen{types: windowTypes, doc: nodeInfo(w.Rendered(), g.info), text: genNodeText}.draw(s, id)
		c, ok := asCommand(cmd)
		if !ok {
			return nil
		}
		w.Local(c)
		return map[string]any{"local": cmd}
	case k == 1:
		return g.echo(pending)
	case k == 2:
		id := "zz"
		if unknown := s.Chance(15); len(pending) > 0 && !unknown {
			id = pending[s.Intn(len(pending))].ID
		}
		code := Pick(s, []string{kbcore.CodeNodeNotFound, kbcore.CodeInvalidPayload, "id-reused"})
		w.Reject(id, code)
		return map[string]any{"reject": map[string]any{"id": id, "code": code}}
	case k == 3:
		snap, at, outcomes := genSnapshot(s, w)
		oc := map[string]kbcore.Outcome{}
		ob, _ := json.Marshal(outcomes)
		_ = json.Unmarshal(ob, &oc)
		w.Snapshot(snap, at, oc)
		return map[string]any{"snapshot": map[string]any{"doc": plainDoc(snap, g.page), "seq": float64(at), "outcomes": outcomes}}
	default:
		return g.undoRedo(k == 5, pending)
	}
}

// echo delivers a pending command (or another window's) at the next seq,
// or a duplicate, or one past a gap.
func (g *windowGen) echo(pending []kbcore.Command) map[string]any {
	s, w := g.s, g.w
	var c kbcore.Command
	var cmd map[string]any
	if other := s.Chance(25); len(pending) > 0 && !other {
		c = pending[s.Intn(min(2, len(pending)))]
		cmd = commandMap(c)
	} else {
		g.foreign++
		cmd = cmdGen{types: windowTypes, doc: nodeInfo(w.Server(), g.info), text: genNodeText}.draw(s, fmt.Sprintf("x%d", g.foreign))
		var ok bool
		if c, ok = asCommand(cmd); !ok {
			return nil
		}
	}
	at := max(w.Seq()+1+int64(Pick(s, []int{0, 0, 1, 2, -1, -2})), 0)
	w.Echo(at, c)
	return map[string]any{"echo": map[string]any{"seq": float64(at), "cmd": cmd}}
}

// undoRedo asks for an undo (or redo) with usually one fresh id,
// sometimes none, two or a pending one.
func (g *windowGen) undoRedo(redo bool, pending []kbcore.Command) map[string]any {
	s := g.s
	ids := []any{}
	var strs []string
	for range 1 + Pick(s, []int{0, 0, 1, -1, 2}) {
		g.undos++
		id := fmt.Sprintf("u%d", g.undos)
		if dup := s.Chance(5); dup && len(pending) > 0 {
			id = pending[0].ID
		}
		ids = append(ids, id)
		strs = append(strs, id)
	}
	if redo {
		g.w.Redo(strs)
		return map[string]any{"redo": map[string]any{"ids": ids}}
	}
	g.w.Undo(strs)
	return map[string]any{"undo": map[string]any{"ids": ids}}
}

// genSnapshot draws a snapshot for w: the server document, or the rendered
// one (as if every pending command committed), at a seq near the window's,
// with outcomes for some pending ids.
func genSnapshot(s *Source, w *kbcore.Window) (kbcore.Doc, int64, map[string]any) {
	doc := w.Server()
	committed := s.Chance(50)
	if committed {
		doc = w.Rendered()
	}
	at := max(w.Seq()+int64(Pick(s, []int{1, 0, 2, -1})), 0)
	outcomes := map[string]any{}
	for _, c := range w.Pending() {
		switch s.Intn(4) {
		case 1:
			seq := at
			if other := s.Chance(20); !committed || other {
				seq = int64(Pick(s, []int{0, 1, 2, 5}))
			}
			outcomes[c.ID] = map[string]any{"seq": float64(seq)}
		case 2:
			outcomes[c.ID] = map[string]any{"rejected": map[string]any{"code": kbcore.CodeNodeNotFound, "message": "gone"}}
		}
	}
	return doc, at, outcomes
}

// nodeInfo describes the nodes of d (the page record of base is kept).
func nodeInfo(d kbcore.Doc, base docInfo) docInfo {
	info := docInfo{kinds: map[string]string{}, page: base.page}
	for _, n := range d.Nodes() {
		info.ids = append(info.ids, n.ID)
		info.kinds[n.ID] = n.Kind
	}
	slices.Sort(info.ids)
	return info
}

// asCommand decodes a drawn command as the reference reads one; false when
// it could not read it (the step is dropped).
func asCommand(cmd map[string]any) (kbcore.Command, bool) {
	b, err := json.Marshal(cmd)
	if err != nil {
		return kbcore.Command{}, false
	}
	var c kbcore.Command
	if json.Unmarshal(b, &c) != nil {
		return kbcore.Command{}, false
	}
	return c, true
}

// commandMap is a command as plain JSON values.
func commandMap(c kbcore.Command) map[string]any {
	b, _ := json.Marshal(c)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// Planner pools: three pages whose titles and aliases collide often.
var (
	plannerPages  = []string{"P", "Q", "R"}
	plannerTitles = []string{"Alpha", "Beta", "Gamma", "alpha", "New", "Ünï", "U\u0308nï", "", "a]]b", "x\ty"}
	plannerTexts  = []string{"[[Alpha]]", "#Beta", "[[Gamma]]", "((Alpha))", "[[New]]", "#[[Ünï]]",
		"[[U\u0308nï]]", " and ", "[[alpha]]", "#Alpha", "[[Beta]] [[Beta]]", "x", "[[a]]b]]"}
)

// plannerText is node text made of links to the pool's titles.
func plannerText(s *Source) string {
	out := ""
	s.List(60, 4, func(int) {
		if s.Chance(15) {
			out += genText(s)
			return
		}
		out += Pick(s, plannerTexts)
	})
	return out
}

// genPlannerCase draws a workspace of up to three pages and one command
// on one of them (or on a page that does not exist).
func genPlannerCase(s *Source, types []string) cases.Case {
	typ := Pick(s, types)
	var pages []any
	var infos []docInfo
	var recs []map[string]any
	n := 1 + s.Intn(3)
	for i := range n {
		nodes, info := genNodes(s, 65, 3, plannerText)
		rec := genPageRecord(s, plannerPages[i], plannerPages[:n])
		rec["title"] = Pick(s, plannerTitles)
		aliases := []any{}
		s.List(25, 2, func(int) { aliases = append(aliases, Pick(s, plannerTitles)) })
		rec["aliases"] = aliases
		infos = append(infos, info)
		recs = append(recs, rec)
		pages = append(pages, map[string]any{"page": rec, "nodes": nodes})
	}
	k := s.Intn(n)
	page := plannerPages[k]
	if s.Chance(5) {
		page = "Z"
	}
	// restore-page undoes a merge: mostly of a page that was merged.
	if merged := s.Chance(70); merged && typ == kbcore.TypeRestorePage && n > 1 {
		recs[k]["merged_into"] = plannerPages[(k+1)%n]
	}
	g := cmdGen{types: types, doc: infos[k], self: page, pages: plannerPages[:n], titles: plannerTitles, text: plannerText}
	cmd := g.drawType(s, "c1", typ)
	return cases.Case{Given: map[string]any{"pages": pages}, When: map[string]any{"page": page, "cmd": cmd}}
}

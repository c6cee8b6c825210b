package fuzz

import (
	"encoding/json"
	"slices"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// An input is a case without its expected side: Given, When or Steps.
// The reference fills in Then (or each step's expect), see expect.go.

// genCommandCase draws a command case: a document and one command.
func genCommandCase(s *Source, types []string) cases.Case {
	typ := pickWeighted(s, types, typeWeights(types))
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
	if s.Chance(15) {
		return cases.Case{When: map[string]any{"text": genLabelText(s)}}
	}
	return cases.Case{When: map[string]any{"text": genText(s)}}
}

// windowTypes are the commands a window script's local steps use; the
// window's rules (spec/window.md) do not depend on the command type but
// on its inverse, so a few that change, create and remove nodes are
// enough, with restore, whose inverse is one delete per restored root (an
// undo step of several commands).
var windowTypes = []string{kbcore.TypeEditText, kbcore.TypeCreateAfter, kbcore.TypeDelete,
	kbcore.TypeIndent, kbcore.TypeMoveNode, kbcore.TypeOutdent, kbcore.TypeRestore, kbcore.TypeSetCell}

// nodeInfo describes the nodes of d (the page record of base is kept).
func nodeInfo(d kbcore.Doc, base docInfo) docInfo {
	info := docInfo{kinds: map[string]string{}, parent: map[string]string{}, ranks: map[string]string{}, cells: map[string][]string{}, page: base.page}
	for _, n := range d.Nodes() {
		info.ids = append(info.ids, n.ID)
		info.kinds[n.ID] = n.Kind
		info.parent[n.ID] = n.Parent
		info.ranks[n.ID] = n.Rank
		if n.Kind == kbcore.KindTable {
			for c := range n.Cells {
				info.cells[n.ID] = append(info.cells[n.ID], c)
			}
			slices.Sort(info.cells[n.ID])
		}
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
	typ := pickWeighted(s, types, typeWeights(types))
	var pages []any
	var infos []docInfo
	var recs []map[string]any
	n := pickWeighted(s, []int{1, 2, 3}, []int{1, 2, 3})
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
	// Merges of merged pages: a chain of pages each merged into the next,
	// from the command's page (restore-page takes names back from a target
	// merged in turn) or from the one after it (a merge into a merged
	// page), closed into a loop now and then.
	p := 30
	if typ == kbcore.TypeRestorePage {
		p = 60
	}
	if chain := s.Chance(p); chain && n > 1 {
		from := k + s.Intn(2)
		for j := range n - 1 {
			recs[(from+j)%n]["merged_into"] = plannerPages[(from+j+1)%n]
		}
		if loop := s.Chance(10); loop {
			recs[(from+n-1)%n]["merged_into"] = plannerPages[from%n]
		}
	}
	if s.Chance(5) {
		page = "Z"
	}
	// restore-page undoes a merge: mostly of a page that was merged.
	if merged := s.Chance(70); merged && typ == kbcore.TypeRestorePage && n > 1 {
		recs[k]["merged_into"] = plannerPages[(k+1)%n]
	}
	// A merge left its page's names as aliases of the target: mostly so
	// here too, for the unmerge to take back.
	for _, rec := range recs {
		into, _ := rec["merged_into"].(string)
		t := slices.Index(plannerPages[:n], into)
		if mirror := s.Chance(70); !mirror || t < 0 || recs[t] == nil {
			continue
		}
		aliases, _ := recs[t]["aliases"].([]any)
		for _, a := range append([]any{rec["title"]}, rec["aliases"].([]any)...) {
			if a != recs[t]["title"] && !slices.Contains(aliases, a) {
				aliases = append(aliases, a)
			}
		}
		recs[t]["aliases"] = aliases
	}
	g := cmdGen{types: types, doc: infos[k], self: page, pages: plannerPages[:n], titles: plannerTitles, text: plannerText}
	if into, _ := recs[k]["merged_into"].(string); slices.Contains(plannerPages[:n], into) {
		// Its nested nodes twice: a root that is no root there any more.
		t := slices.Index(plannerPages[:n], into)
		for _, id := range infos[t].ids {
			if infos[t].parent[id] != "" {
				g.namesakes = append(g.namesakes, id)
			}
		}
		g.namesakes = append(g.namesakes, infos[t].ids...)
	}
	cmd := g.drawType(s, "c1", typ)
	return cases.Case{Given: map[string]any{"pages": pages}, When: map[string]any{"page": page, "cmd": cmd}}
}

package fuzz

import (
	"slices"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// Pools the generators draw names from, simplest first. Small pools make
// collisions (an existing id, a taken title, adjacent ranks) common.
var (
	nodeIDs = []string{"a", "b", "c", "d", "e", "f", "g", "h", "n1", "n2"}
	// rankKeys are valid order keys (spec/README.md section 3), with
	// neighbours whose midpoint rounds, integer parts at both ends,
	// fractions of several lengths, and neighbours whose fractions share a
	// prefix that the lower one extends with another digit (a012, a015:
	// the midpoint is of what follows the prefix).
	rankKeys = []string{"a0", "a1", "a0V", "a0G", "a2", "Zz", "a0k", "a1V", "b00",
		"b01", "a0001", "a0z", "a0zz", "zzzzzzzzzzzzzzzzzzzzzzzzzzz", "A00000000000000000000000001", "Z0", "a00V",
		"a012", "a015"}
	badRanks   = []string{"", "a", "a00", "0", "!", "a0 ", "A00000000000000000000000000"}
	pageTitles = []string{"Alpha", "Beta", "Test page", "alpha", "Gamma", "Ünï", "U\u0308nï",
		"e\u0301", "é", "Budget", "a b", " Alpha", "x\ty", "x\u007fy", ""}
	pageDirs = []string{"", "work", "unfiled", "a/b"}
	// otherPage is the id a merged page of the commands suite points at.
	otherPage = "00000000-0000-0000-0000-000000000002"
)

// docInfo is what a generator knows of a document it drew.
type docInfo struct {
	ids    []string            // node ids, in drawing order
	kinds  map[string]string   // id -> kind
	parent map[string]string   // id -> parent id ("" at the root)
	ranks  map[string]string   // id -> rank
	cells  map[string][]string // table id -> its cell names, sorted
	page   map[string]any      // the page record, nil when the default
}

func (d docInfo) has(id string) bool { return slices.Contains(d.ids, id) }

// pickNode is an id of the document (when it has nodes) or of the pool.
func (d docInfo) pickNode(s *Source) string {
	// Both choices are read whatever the document holds, so that the
	// choices after them stay in place when shrinking drops a node.
	if pool := s.Chance(10); len(d.ids) > 0 && !pool {
		return Pick(s, d.ids)
	}
	return Pick(s, nodeIDs)
}

// pickKind is mostly a node of that kind, when the document has one.
func (d docInfo) pickKind(s *Source, kind string) string {
	var of []string
	for _, id := range d.ids {
		if d.kinds[id] == kind {
			of = append(of, id)
		}
	}
	if other := s.Chance(15); len(of) > 0 && !other {
		return Pick(s, of)
	}
	return d.pickNode(s)
}

// freshNode is an id the document does not have (almost always).
func (d docInfo) freshNode(s *Source) string {
	var free []string
	for _, id := range nodeIDs {
		if !d.has(id) {
			free = append(free, id)
		}
	}
	if taken := s.Chance(5); taken || len(free) == 0 {
		return Pick(s, nodeIDs)
	}
	return Pick(s, free)
}

// genPageRecord draws a page record with the given id.
func genPageRecord(s *Source, id string, mergedInto []string) map[string]any {
	aliases := []any{}
	s.List(25, 3, func(int) { aliases = append(aliases, Pick(s, pageTitles)) })
	var merged any
	if len(mergedInto) > 0 && s.Chance(10) {
		merged = Pick(s, mergedInto)
	}
	return map[string]any{
		"id": id, "title": Pick(s, pageTitles), "aliases": aliases,
		"dir": Pick(s, pageDirs), "merged_into": merged,
	}
}

// genNodes draws a tree of nodes as case records (defaults omitted: parent
// null, kind text, text ""), with distinct ids and distinct ranks among
// siblings, so the document is valid.
func genNodes(s *Source, p, maxNodes int, text func(*Source) string) ([]any, docInfo) {
	info := docInfo{kinds: map[string]string{}, parent: map[string]string{}, ranks: map[string]string{}, cells: map[string][]string{}}
	var nodes []any
	used := map[string]map[string]bool{} // parent -> ranks
	s.List(p, maxNodes, func(int) {
		id := Pick(s, nodeIDs)
		for info.has(id) {
			id = nodeIDs[(slices.Index(nodeIDs, id)+1)%len(nodeIDs)]
		}
		n := map[string]any{"id": id}
		parent := ""
		if child := s.Chance(45); child && len(info.ids) > 0 {
			// Often under the latest node, which makes deep chains.
			if deep := s.Chance(40); deep {
				parent = info.ids[len(info.ids)-1]
			} else {
				parent = Pick(s, info.ids)
			}
			n["parent"] = parent
		}
		if used[parent] == nil {
			used[parent] = map[string]bool{}
		}
		k := s.Intn(len(rankKeys))
		for used[parent][rankKeys[k]] {
			k = (k + 1) % len(rankKeys)
		}
		used[parent][rankKeys[k]] = true
		n["rank"] = rankKeys[k]
		kind := "text"
		switch v := s.Intn(10); {
		case v == 8:
			kind = "code"
		case v == 9:
			kind = "table"
		}
		if kind != "text" {
			n["kind"] = kind
		}
		if t := text(s); t != "" {
			n["text"] = t
		}
		switch kind {
		case "code":
			outs := []any{}
			s.List(30, 2, func(int) {
				outs = append(outs, map[string]any{"mime": Pick(s, []string{"text/plain", "image/png", ""}), "data": genText(s)})
			})
			n["outputs"] = outs
		case "table":
			cells := map[string]any{}
			if graph := s.Chance(50); graph {
				cells = genCellGraph(s)
			} else {
				s.List(40, 3, func(int) { cells[Pick(s, cellNames)] = genFormula(s) })
			}
			n["cells"] = cells
			info.cells[id] = sortedKeys(cells)
		}
		nodes = append(nodes, n)
		info.ids = append(info.ids, id)
		info.kinds[id] = kind
		info.parent[id] = parent
		info.ranks[id] = rankKeys[k]
	})
	if nodes == nil {
		nodes = []any{}
	}
	return nodes, info
}

var cellNames = []string{"A1", "B1", "A2", "B2", "C3", "AA10", "Z99"}

// genCommandDoc draws the given document of a command case: the default
// page or a drawn record of it, and a few nodes. A create-page mostly
// gets an unborn page (no title yet), the page commands a drawn record.
func genCommandDoc(s *Source, typ string) (map[string]any, docInfo) {
	nodes, info := genNodes(s, 80, 6, genNodeText)
	doc := map[string]any{"nodes": nodes}
	p := 30
	if ti, _ := kbcore.Lookup(typ); ti.Level == kbcore.PageLevel {
		p = 80
	}
	if s.Chance(p) {
		info.page = genPageRecord(s, cases.DefaultPage["id"].(string), []string{otherPage})
		if typ == kbcore.TypeCreatePage && s.Chance(70) {
			info.page["title"] = ""
		}
		if typ == kbcore.TypeRestorePage && s.Chance(70) {
			info.page["merged_into"] = otherPage
		}
		doc["page"] = info.page
	}
	return doc, info
}

// genNodeText is node text: often empty or a word, else drawn text.
func genNodeText(s *Source) string {
	switch s.Intn(4) {
	case 0:
		return ""
	case 1:
		return Pick(s, []string{"x", "see [[Alpha]]", "#todo", "cash: $5", "[[Beta]] and #Gamma"})
	}
	return genText(s)
}

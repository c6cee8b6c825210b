package fuzz

import (
	"slices"

	"github.com/subspace/kbkit/kbcore"
)

// cmdMode is how far a drawn command strays from a valid one.
type cmdMode int

const (
	valid     cmdMode = iota // well-formed, against the document's ids
	nearValid                // one field off: missing, unknown, empty, an unknown id
	malformed                // a payload of the wrong shape, an unknown type
)

// cmdGen draws commands against a document.
type cmdGen struct {
	types  []string // the command types to draw
	doc    docInfo
	self   string   // the page the command is for (restore-page's page)
	pages  []string // other page ids (merge-page's into)
	titles []string // titles for page commands
	text   func(*Source) string
	// namesakes are ids restore-page's roots are often given: the nodes
	// of the page's merge target, where a merge put them.
	namesakes []string
}

// draw returns one command {id, type, payload} with id cmdID.
func (g cmdGen) draw(s *Source, cmdID string) map[string]any {
	return g.drawType(s, cmdID, Pick(s, g.types))
}

// drawType is draw for a command of type typ.
func (g cmdGen) drawType(s *Source, cmdID, typ string) map[string]any {
	mode := valid
	switch v := s.Intn(10); {
	case v >= 9:
		mode = malformed
	case v >= 7:
		mode = nearValid
	}
	cmd := map[string]any{"id": cmdID, "type": typ}
	if mode == malformed {
		switch s.Intn(6) {
		case 0:
			cmd["payload"] = nil
		case 1:
			cmd["payload"] = []any{}
		case 2:
			cmd["payload"] = "x"
		case 3:
			cmd["payload"] = float64(1)
		case 4:
			cmd["type"] = Pick(s, []string{"frobnicate", "", "Edit-Text", "edit_text"})
			cmd["payload"] = g.payload(s, typ)
		default:
			delete(cmd, "payload")
		}
		return cmd
	}
	p := g.payload(s, typ)
	if mode == nearValid {
		g.stray(s, p)
	}
	cmd["payload"] = p
	return cmd
}

// stray changes one field of a payload: drops it, empties it, gives it
// the wrong JSON type, or adds an unknown field.
func (g cmdGen) stray(s *Source, p map[string]any) {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) == 0 || s.Chance(20) {
		p[Pick(s, []string{"extra", "Node", "id"})] = "x"
		return
	}
	k := Pick(s, keys)
	switch s.Intn(6) {
	case 0:
		delete(p, k)
	case 1:
		p[k] = ""
	case 2:
		p[k] = float64(7)
	case 3:
		p[k] = nil
	case 4:
		p[k] = []any{"a"}
	default:
		p[k] = map[string]any{}
	}
}

// payload draws a well-formed payload of typ: its generator's, nil for a
// type without one (Run refuses to start then: missingGenerators).
func (g cmdGen) payload(s *Source, typ string) map[string]any {
	gen, ok := payloadGens[typ]
	if !ok {
		return nil
	}
	return gen(g, s)
}

// missingGenerators lists, in spec order, the registry's command types
// payloadGens has no generator for: types the fuzzer would only ever send
// invalid payloads of.
func missingGenerators() []string {
	return kbcore.TypesWhere(func(ti kbcore.TypeInfo) bool { _, ok := payloadGens[ti.Type]; return !ok })
}

// payloadGens draws a well-formed payload of each command type of the
// registry (kbcore.Registry) against the generator's document.
// TestGeneratorPerType holds its keys to the registry.
var payloadGens = map[string]func(g cmdGen, s *Source) map[string]any{
	kbcore.TypeCreateAfter: func(g cmdGen, s *Source) map[string]any {
		p := map[string]any{"text": g.text(s)}
		switch s.Intn(4) {
		case 1:
			p["after"] = g.doc.pickNode(s)
		case 2:
			p["parent"] = g.doc.pickNode(s)
		case 3:
			p["after"], p["parent"] = g.doc.pickNode(s), g.doc.pickNode(s)
		}
		if s.Chance(50) {
			p["node"] = g.doc.freshNode(s)
		}
		if s.Chance(25) {
			p["kind"] = Pick(s, []string{"text", "code", "table", "image"})
		}
		if s.Chance(20) {
			p["rank"] = g.rank(s)
		}
		return p
	},
	kbcore.TypeEditText: func(g cmdGen, s *Source) map[string]any {
		return map[string]any{"node": g.doc.pickNode(s), "text": g.text(s)}
	},
	kbcore.TypeMoveNode: func(g cmdGen, s *Source) map[string]any {
		node := g.doc.pickNode(s)
		p := map[string]any{"node": node, "parent": nil, "after": nil}
		switch s.Intn(5) {
		case 3:
			p["parent"] = g.doc.pickNode(s)
		case 4: // under itself, deep down: a cycle a shallow check misses
			p["parent"] = g.doc.pickDescendant(s, node)
		}
		if s.Chance(50) {
			p["after"] = g.doc.pickNode(s)
		}
		if s.Chance(20) {
			p["rank"] = g.rank(s)
		}
		return p
	},
	kbcore.TypeIndent:  nodeOnly,
	kbcore.TypeOutdent: nodeOnly,
	kbcore.TypeDelete:  nodeOnly,
	kbcore.TypeRestore: func(g cmdGen, s *Source) map[string]any {
		return map[string]any{"nodes": g.records(s)}
	},
	kbcore.TypeSetOutputs: func(g cmdGen, s *Source) map[string]any {
		outs := []any{}
		s.List(40, 3, func(int) {
			outs = append(outs, map[string]any{"mime": Pick(s, []string{"text/plain", "text/html"}), "data": genText(s)})
		})
		return map[string]any{"node": g.doc.pickKind(s, "code"), "outputs": outs}
	},
	kbcore.TypeSetCell: func(g cmdGen, s *Source) map[string]any {
		node := g.doc.pickKind(s, "table")
		// The table's own cells and the graph's, mostly: an edit that
		// closes, breaks or shares a path of the table's formula graph.
		cells := g.doc.cells[node]
		cell := Pick(s, cellNames)
		switch k := s.Intn(10); {
		case k == 9:
			cell = Pick(s, []string{"a1", "A", "1", "A0", "", "AAAA1"})
		case k >= 6:
			cell = Pick(s, graphCells)
		case k >= 3 && len(cells) > 0:
			cell = Pick(s, cells)
		}
		value := ""
		if !s.Chance(20) {
			value = cellValue(s, append(slices.Clone(cells), cell))
		}
		return map[string]any{"node": node, "cell": cell, "value": value}
	},
	kbcore.TypeCreatePage: func(g cmdGen, s *Source) map[string]any {
		p := map[string]any{"title": Pick(s, g.titles)}
		if s.Chance(30) {
			p["dir"] = Pick(s, pageDirs)
		}
		return p
	},
	kbcore.TypeSetAliases: func(g cmdGen, s *Source) map[string]any {
		return map[string]any{"aliases": g.aliases(s)}
	},
	kbcore.TypeRenamePage: func(g cmdGen, s *Source) map[string]any {
		p := map[string]any{"title": Pick(s, g.titles)}
		if s.Chance(30) {
			p["aliases"] = g.aliases(s)
		}
		return p
	},
	kbcore.TypeMergePage: func(g cmdGen, s *Source) map[string]any {
		return map[string]any{"into": g.other(s)}
	},
	kbcore.TypeRestorePage: func(g cmdGen, s *Source) map[string]any {
		page := g.self
		if s.Chance(10) {
			page = g.other(s)
		}
		return map[string]any{"page": page, "nodes": g.records(s)}
	},
}

// nodeOnly draws the payload of indent, outdent and delete.
func nodeOnly(g cmdGen, s *Source) map[string]any {
	return map[string]any{"node": g.doc.pickNode(s)}
}

// other is a page id other than self, mostly.
func (g cmdGen) other(s *Source) string {
	var others []string
	for _, p := range g.pages {
		if p != g.self {
			others = append(others, p)
		}
	}
	if len(others) == 0 || s.Chance(10) {
		return g.self
	}
	return Pick(s, others)
}

// rank is a rank hint: a valid key, a bad one, or, often, the rank of a
// node of the document (a hint equal to a neighbour's).
func (g cmdGen) rank(s *Source) string {
	switch k := s.Intn(10); {
	case k >= 8:
		return Pick(s, badRanks)
	case k >= 5 && len(g.doc.ids) > 0:
		return g.doc.ranks[Pick(s, g.doc.ids)]
	}
	return Pick(s, rankKeys)
}

func (g cmdGen) aliases(s *Source) []any {
	out := []any{}
	s.List(50, 4, func(int) { out = append(out, Pick(s, g.titles)) })
	return out
}

// records draws node records for restore and restore-page: fresh ids
// mostly, parents among themselves or the document.
func (g cmdGen) records(s *Source) []any {
	nodes, _ := genNodes(s, 80, 3, g.text)
	if fresh := s.Chance(60); fresh {
		freshIDs(nodes, g.doc)
	}
	if forest := s.Chance(30); forest { // every record a root
		for _, n := range nodes {
			delete(n.(map[string]any), "parent")
		}
	}
	if len(g.namesakes) > 0 {
		nameAfter(s, nodes, g.namesakes)
	}
	for _, n := range nodes {
		m := n.(map[string]any)
		if under := s.Chance(25); under && len(g.doc.ids) > 0 && m["parent"] == nil {
			if p := Pick(s, g.doc.ids); p != m["id"] {
				m["parent"] = p
			}
		}
		// Records carry every field (spec/README.md "Nested records").
		if _, ok := m["kind"]; !ok {
			m["kind"] = "text"
		}
		if _, ok := m["text"]; !ok {
			m["text"] = ""
		}
		if _, ok := m["parent"]; !ok {
			m["parent"] = nil
		}
	}
	return nodes
}

// freshIDs renames the records whose ids the document has to ids it has
// not (while the pool lasts), parents following, so that a restore of
// several roots applies rather than failing node-exists.
func freshIDs(nodes []any, doc docInfo) {
	taken := map[string]bool{}
	for _, id := range doc.ids {
		taken[id] = true
	}
	for _, n := range nodes {
		taken[n.(map[string]any)["id"].(string)] = true
	}
	rename := map[string]string{}
	for _, n := range nodes {
		m := n.(map[string]any)
		id := m["id"].(string)
		if !doc.has(id) {
			continue
		}
		for _, f := range nodeIDs {
			if !taken[f] {
				taken[f], rename[id] = true, f
				m["id"] = f
				break
			}
		}
	}
	for _, n := range nodes {
		m := n.(map[string]any)
		if p, ok := m["parent"].(string); ok && rename[p] != "" {
			m["parent"] = rename[p]
		}
	}
}

// nameAfter gives some root records an id of names (one no other record
// has), their children following.
func nameAfter(s *Source, nodes []any, names []string) {
	taken := map[string]bool{}
	for _, n := range nodes {
		taken[n.(map[string]any)["id"].(string)] = true
	}
	rename := map[string]string{}
	for _, n := range nodes {
		m := n.(map[string]any)
		if _, child := m["parent"]; child {
			continue
		}
		if named := s.Chance(50); !named {
			continue
		}
		if id := Pick(s, names); !taken[id] {
			taken[id], rename[m["id"].(string)] = true, id
			m["id"] = id
		}
	}
	for _, n := range nodes {
		m := n.(map[string]any)
		if p, ok := m["parent"].(string); ok && rename[p] != "" {
			m["parent"] = rename[p]
		}
	}
}

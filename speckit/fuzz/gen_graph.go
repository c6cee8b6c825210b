package fuzz

import (
	"slices"
	"strings"
)

// graphCells are the cells a formula graph is drawn on: few, so that
// their sorted order (the order a cycle search starts from) varies with
// which vertex gets which name.
var graphCells = []string{"A1", "B1", "C1", "A2", "B2"}

// Graph shapes, as edges between vertices 0..n-1 (u reads v). Each is one
// a cycle search gets wrong in its own way: a cell reached a second time
// after its search finished (shared, diamond), a path that almost closes
// (near-cycle), a cycle of two to four cells, a cycle with a tail into it
// or out of it.
var graphShapes = []struct {
	n     int
	edges [][2]int
}{
	{3, [][2]int{{0, 1}, {0, 2}, {2, 1}}},                 // shared: 0 reads 1 and 2, 2 reads 1
	{4, [][2]int{{0, 1}, {0, 2}, {1, 3}, {2, 3}}},         // diamond
	{3, [][2]int{{0, 1}, {1, 2}, {2, 0}}},                 // cycle of three
	{3, [][2]int{{0, 1}, {1, 2}}},                         // near-cycle: a chain
	{2, [][2]int{{0, 1}, {1, 0}}},                         // cycle of two
	{4, [][2]int{{0, 1}, {1, 2}, {2, 1}, {3, 0}}},         // tail into a cycle
	{4, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}},         // cycle of four
	{4, [][2]int{{0, 1}, {1, 0}, {1, 2}, {2, 3}, {3, 2}}}, // two cycles, one path
	{1, [][2]int{{0, 0}}},                                 // self-loop
	{4, [][2]int{{0, 3}, {1, 3}, {2, 3}, {0, 1}}},         // one cell shared thrice
}

// genCellGraph draws a table's cells as a formula graph: a shape (or
// random edges) on distinct cells, each formula reading its successors in
// a drawn order; a cell without successors holds a constant.
func genCellGraph(s *Source) map[string]any {
	var n int
	var edges [][2]int
	if random := s.Chance(25); random {
		n = 2 + s.Intn(3)
		for u := range n {
			for v := range n {
				if s.Chance(35) {
					edges = append(edges, [2]int{u, v})
				}
			}
		}
	} else {
		sh := Pick(s, graphShapes)
		n, edges = sh.n, sh.edges
	}
	free := slices.Clone(graphCells)
	names := make([]string, n)
	for i := range names {
		k := s.Intn(len(free))
		names[i] = free[k]
		free = slices.Delete(free, k, k+1)
	}
	reads := make([][]string, n)
	for _, e := range edges {
		reads[e[0]] = append(reads[e[0]], names[e[1]])
	}
	cells := map[string]any{}
	for u, name := range names {
		cells[name] = cellFormula(s, reads[u])
	}
	return cells
}

// cellFormula is a formula reading cells in a drawn order (or a constant
// when it reads none): terms joined by an operator, or a SUM of them, and
// sometimes a range or a page label among them.
func cellFormula(s *Source, reads []string) string {
	if len(reads) == 0 {
		return Pick(s, []string{"1", "=1", "x", "=[[P]]:k", ""})
	}
	terms := slices.Clone(reads)
	for i := len(terms) - 1; i > 0; i-- {
		j := s.Intn(i + 1)
		terms[i], terms[j] = terms[j], terms[i]
	}
	if s.Chance(15) {
		terms = append(terms, Pick(s, []string{"2", "[[P]]:k", "Z99"}))
	}
	if s.Chance(25) {
		return "=SUM(" + strings.Join(terms, ",") + ")"
	}
	return "=" + strings.Join(terms, Pick(s, []string{"+", "*", "-"}))
}

// cellValue is a set-cell value for a table whose cells are cells: mostly
// a formula reading some of them (closing a cycle, sharing a cell, or
// neither), else a drawn formula.
func cellValue(s *Source, cells []string) string {
	if drawn := s.Chance(40); drawn || len(cells) == 0 {
		return genFormula(s)
	}
	var reads []string
	s.List(60, 3, func(int) {
		if fresh := s.Chance(15); fresh {
			reads = append(reads, Pick(s, graphCells))
			return
		}
		reads = append(reads, Pick(s, cells))
	})
	return cellFormula(s, reads)
}

// pickDescendant is a node under id (a child or deeper, the deeper the
// likelier), or a node of the document when id has none.
func (d docInfo) pickDescendant(s *Source, id string) string {
	var under []string
	for _, c := range d.ids {
		for p, steps := d.parent[c], 0; p != "" && steps <= len(d.ids); p, steps = d.parent[p], steps+1 {
			if p == id {
				under = append(under, c)
				break
			}
		}
	}
	if len(under) == 0 {
		return d.pickNode(s)
	}
	// The deepest last: drawing from the end favours them.
	slices.SortStableFunc(under, func(a, b string) int { return d.depth(a) - d.depth(b) })
	return under[len(under)-1-s.Intn(len(under))/2]
}

// depth counts a node's ancestors (bounded by the document's size).
func (d docInfo) depth(id string) int {
	n := 0
	for p := d.parent[id]; p != "" && n <= len(d.ids); p = d.parent[p] {
		n++
	}
	return n
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package kbcore

import (
	"sort"

	"github.com/subspace/kbkit/kbcore/token"
)

// NodeIndex is what one node contributes to the page index. It is a pure
// function of the node alone, so the store rewrites the index rows of the
// changed nodes only.
type NodeIndex struct {
	// Refs are the links, tags and embeds of the node's text, then those of
	// its formula cells (cells in name order), in the order they appear.
	Refs []token.Ref `json:"refs,omitempty"`
	// Label is the node's first `label: value` line (text and table nodes).
	Label *token.Label `json:"label,omitempty"`
	// Deps are the edges of a table's formulas, by cell name then position.
	Deps []CellDep `json:"deps,omitempty"`
	// Cycles lists, sorted, the table's cells on a dependency cycle; they
	// display #CYCLE. The edit that made the cycle still commits.
	Cycles []string `json:"cycles,omitempty"`
}

// CellDep is one formula dependency: Cell's formula reads On.
type CellDep struct {
	Cell string    `json:"cell"`
	On   token.Dep `json:"on"`
}

// Empty reports whether the node contributes nothing to the index.
func (x NodeIndex) Empty() bool {
	return len(x.Refs) == 0 && x.Label == nil && len(x.Deps) == 0 && len(x.Cycles) == 0
}

// IndexNode computes the index entry of one node. Code nodes contribute
// nothing: nothing is parsed inside code.
func IndexNode(n Node) NodeIndex {
	var x NodeIndex
	if n.Kind == KindCode {
		return x
	}
	toks := token.Tokenize(n.Text)
	x.Refs, x.Label = toks.Refs, toks.Label
	if n.Kind != KindTable || len(n.Cells) == 0 {
		return x
	}
	cells := make([]string, 0, len(n.Cells))
	for c := range n.Cells {
		cells = append(cells, c)
	}
	sort.Strings(cells)
	edges := map[string][]string{}
	for _, c := range cells {
		f := token.TokenizeFormula(n.Cells[c])
		x.Refs = append(x.Refs, f.Refs...)
		for _, d := range f.Deps {
			x.Deps = append(x.Deps, CellDep{Cell: c, On: d})
			if d.Cell != "" {
				edges[c] = append(edges[c], d.Cell)
			}
		}
	}
	x.Cycles = cycles(cells, edges)
	return x
}

// cycles returns the sorted members of every strongly connected component
// that is a cycle (more than one member, or a self-loop), by Tarjan's
// algorithm made iterative so that no input can exhaust the stack.
func cycles(vertices []string, edges map[string][]string) []string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack, out []string
	next := 0
	type frame struct {
		v string
		i int
	}
	for _, root := range vertices {
		if _, seen := index[root]; seen {
			continue
		}
		call := []frame{{v: root}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.i < len(edges[f.v]) {
				w := edges[f.v][f.i]
				f.i++
				if _, seen := index[w]; !seen {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{v: w})
				} else if onStack[w] && index[w] < low[f.v] {
					low[f.v] = index[w]
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				if p := call[len(call)-1].v; low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] != index[v] {
				continue
			}
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			if len(scc) > 1 || selfLoop(v, edges[v]) {
				out = append(out, scc...)
			}
		}
	}
	sort.Strings(out)
	return out
}

func selfLoop(v string, to []string) bool {
	for _, w := range to {
		if w == v {
			return true
		}
	}
	return false
}

// Index is the whole page's index: node id -> entry, for nodes that have one.
// It costs O(n); the server indexes changed nodes with IndexNode instead.
func (d Doc) Index() map[string]NodeIndex {
	out := map[string]NodeIndex{}
	for _, n := range d.Nodes() {
		if x := IndexNode(n); !x.Empty() {
			out[n.ID] = x
		}
	}
	return out
}

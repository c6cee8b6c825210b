package benchdoc

import (
	"fmt"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/kbcore/rank"
)

// Page returns the page of n nodes; node "g<G>k<K>" is child K of group G.
func Page(n int) (kbcore.Doc, error) {
	groups := (n + 99) / 100
	top, err := rank.NBetween("", "", groups)
	if err != nil {
		return kbcore.Doc{}, err
	}
	kids, err := rank.NBetween("", "", 99)
	if err != nil {
		return kbcore.Doc{}, err
	}
	nodes := make([]kbcore.Node, 0, n)
	for g := 0; g < groups && len(nodes) < n; g++ {
		root := fmt.Sprintf("g%d", g)
		nodes = append(nodes, kbcore.Node{ID: root, Rank: top[g], Text: "heading " + root})
		for k := 0; k < 99 && len(nodes) < n; k++ {
			nodes = append(nodes, kbcore.Node{ID: fmt.Sprintf("g%dk%d", g, k), Parent: root, Rank: kids[k],
				Text: "some text with a [[Link]] and #tag"})
		}
	}
	return kbcore.NewDoc(kbcore.Page{ID: "p", Title: "Bench"}, nodes)
}

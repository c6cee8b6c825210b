package kbcore_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/kbcore/rank"
)

// benchDoc builds a page of n nodes: groups of 100, one top-level node
// each with 99 children, so lookups, neighbours and moves are realistic.
func benchDoc(b *testing.B, n int) kbcore.Doc {
	b.Helper()
	groups := (n + 99) / 100
	top, err := rank.NBetween("", "", groups)
	if err != nil {
		b.Fatal(err)
	}
	kids, err := rank.NBetween("", "", 99)
	if err != nil {
		b.Fatal(err)
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
	d, err := kbcore.NewDoc(kbcore.Page{ID: "p", Title: "Bench"}, nodes)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func BenchmarkApply(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		d := benchDoc(b, n)
		mid := (n / 100) / 2
		cmds := map[string]kbcore.Command{
			"edit-text":    {ID: "c1", Type: kbcore.TypeEditText, Payload: json.RawMessage(fmt.Sprintf(`{"node":"g%dk50","text":"edited text"}`, mid))},
			"create-after": {ID: "c2", Type: kbcore.TypeCreateAfter, Payload: json.RawMessage(fmt.Sprintf(`{"after":"g%dk50","text":"new"}`, mid))},
			"move-node":    {ID: "c3", Type: kbcore.TypeMoveNode, Payload: json.RawMessage(fmt.Sprintf(`{"node":"g%dk50","parent":"g0","after":"g0k10"}`, mid))},
		}
		for _, op := range []string{"edit-text", "create-after", "move-node"} {
			c := cmds[op]
			if r := kbcore.Apply(d, c); r.Rejected != nil {
				b.Fatalf("%s rejected: %s", op, r.Rejected.Message)
			}
			b.Run(fmt.Sprintf("%s/n=%d", op, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					kbcore.Apply(d, c)
				}
			})
		}
	}
}

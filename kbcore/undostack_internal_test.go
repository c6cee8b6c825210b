package kbcore

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestUndoStackForgetsAsTheWholeScanDid: under any sequence of pushes,
// pops, forgets (of ids on the stack, anywhere in it, or not on it, ids
// reused across entries included) and clears, the stack holds what a
// whole-history scan (slices.DeleteFunc over every entry, as forget did
// before it counted ids) would hold; with a limit (Window.LimitUndo), its
// last entries up to the limit.
func TestUndoStackForgetsAsTheWholeScanDid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s undoStack
		var model []undoEntry
		limit := rapid.IntRange(-1, 5).Draw(t, "limit") // -1: no limit
		if limit >= 0 {
			s.limited, s.max = true, limit
		}
		id := rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f"})
		for i := range rapid.IntRange(0, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3:
				ids := rapid.SliceOfN(id, 1, 3).Draw(t, "ids")
				e := undoEntry{ids: ids, cmd: []Command{{ID: fmt.Sprint(i)}}}
				s.push(e)
				model = append(model, e)
				if limit >= 0 && len(model) > limit {
					model = model[len(model)-limit:]
				}
			case 4:
				if len(model) > 0 {
					got := s.pop()
					want := model[len(model)-1]
					model = model[:len(model)-1]
					if got.cmd[0].ID != want.cmd[0].ID {
						t.Fatalf("pop %v, want %v", got, want)
					}
				}
			case 5:
				s.clear()
				model = nil
			default:
				x := id.Draw(t, "forget")
				s.forget(x)
				model = slices.DeleteFunc(model, func(e undoEntry) bool { return contains(e.ids, x) })
			}
			if len(s.entries) != len(model) {
				t.Fatalf("%d entries, want %d", len(s.entries), len(model))
			}
			counts := map[string]int{}
			for k, e := range model {
				if s.entries[k].cmd[0].ID != e.cmd[0].ID {
					t.Fatalf("entry %d is %v, want %v", k, s.entries[k], e)
				}
				for _, x := range e.ids {
					counts[x]++
				}
			}
			if len(counts) != len(s.ids) {
				t.Fatalf("ids counted %v, want %v", s.ids, counts)
			}
			for x, n := range counts {
				if s.ids[x] != n {
					t.Fatalf("ids counted %v, want %v", s.ids, counts)
				}
			}
		}
	})
}

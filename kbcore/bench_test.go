package kbcore_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/subspace/kbkit/internal/benchdoc"

	"github.com/subspace/kbkit/kbcore"
)

// benchDoc is benchdoc.Page(n).
func benchDoc(b *testing.B, n int) kbcore.Doc {
	b.Helper()
	d, err := benchdoc.Page(n)
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

// BenchmarkWindowEcho is a window of a 20-node page receiving the echo of
// another window's keystroke (edit-text): idle (nothing pending), and
// with one own command pending (folded when the editor next types, one
// echo in eight).
func BenchmarkWindowEcho(b *testing.B) {
	benchWindowEcho(b, false)
}

// BenchmarkWindowEchoShared is the same echo received by two windows of
// the page: the first applies it, the second takes the result
// (EchoShared); compare with twice BenchmarkWindowEcho/idle.
func BenchmarkWindowEchoShared(b *testing.B) {
	benchWindowEcho(b, true)
}

func benchWindowEcho(b *testing.B, sharedOnly bool) {
	d := benchDoc(b, 20)
	edit := func(id string, text string) kbcore.Command {
		return kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"g0k5","text":"` + text + `"}`)}
	}
	run := func(b *testing.B, pending bool, shared bool) {
		b.ReportAllocs()
		w := kbcore.NewWindow(d, 1)
		other := kbcore.NewWindow(d, 1)
		if pending {
			w.Local(kbcore.Command{ID: "own", Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"g0k7","text":"mine"}`)})
		}
		seq := int64(1)
		for b.Loop() {
			seq++
			c := edit(fmt.Sprintf("c%d", seq%4), "some text")
			if shared {
				prev := other.Server()
				other.Echo(seq, c)
				w.EchoShared(seq, c, prev, other.Server())
			} else {
				w.Echo(seq, c)
			}
			if pending && seq%8 == 0 {
				w.Rendered() // the editor's next keystroke reads the fold
			}
		}
	}
	if sharedOnly {
		b.Run("pair", func(b *testing.B) { run(b, false, true) })
		return
	}
	b.Run("idle", func(b *testing.B) { run(b, false, false) })
	b.Run("pending", func(b *testing.B) { run(b, true, false) })
}

// BenchmarkWindowLocal is one keystroke in a window: the rendered page,
// the local application with its inverse (for undo).
func BenchmarkWindowLocal(b *testing.B) {
	d := benchDoc(b, 20)
	b.ReportAllocs()
	w := kbcore.NewWindow(d, 1)
	seq := int64(1)
	for b.Loop() {
		seq++
		id := fmt.Sprintf("c%d", seq)
		w.Local(kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"g0k5","text":"typed"}`)})
		w.Echo(seq, kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"g0k5","text":"typed"}`)})
	}
}

// BenchmarkWindowRejectAfterLongHistory is a rejection of an own command
// in a window that already made 100,000 (each an undo entry): the
// rejection forgets the command's entries, which are at the top of the
// history, without comparing its id with every entry below them.
func BenchmarkWindowRejectAfterLongHistory(b *testing.B) {
	d := benchDoc(b, 20)
	b.ReportAllocs()
	w := kbcore.NewWindow(d, 1)
	seq := int64(1)
	edit := func(id string) kbcore.Command {
		return kbcore.Command{ID: id, Type: kbcore.TypeEditText, Payload: json.RawMessage(`{"node":"g0k5","text":"typed"}`)}
	}
	for range 100_000 {
		seq++
		id := fmt.Sprintf("c%d", seq)
		w.Local(edit(id))
		w.Echo(seq, edit(id))
	}
	n := 0
	for b.Loop() {
		n++
		id := fmt.Sprintf("r%d", n)
		w.Local(edit(id))
		w.Reject(id, "node-not-found")
	}
}

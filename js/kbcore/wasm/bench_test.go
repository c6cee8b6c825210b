//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"

	"github.com/subspace/kbkit/internal/benchdoc"

	"github.com/subspace/kbkit/kbcore"
)

// benchPage is benchdoc.Page(n).
func benchPage(b *testing.B, n int) kbcore.Doc {
	b.Helper()
	d, err := benchdoc.Page(n)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkEditText is the native side of make wasm-bench: edit-text of
// one node on a 100- and a 10,000-node page, as kbcore.Apply on a parsed
// document (the reducer alone) and as apply, the very function the
// module's apply call runs (parse the document's JSON, Apply, write the
// new document, the inverse and the whole index as JSON), compiled for
// this machine instead of WebAssembly.
func BenchmarkEditText(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		d := benchPage(b, n)
		cmd := kbcore.Command{ID: "c1", Type: "edit-text",
			Payload: json.RawMessage(fmt.Sprintf(`{"node":"g%dk50","text":"edited [[Other]] text"}`, (n/100)/2))}
		if r := kbcore.Apply(d, cmd); r.Rejected != nil {
			b.Fatal(r.Rejected.Message)
		}
		docJSON, _ := d.MarshalJSON()
		cmdJSON, _ := json.Marshal(cmd)
		b.Run(fmt.Sprintf("kbcore.Apply/n=%d", n), func(b *testing.B) {
			cpuLoop(b, func() { kbcore.Apply(d, cmd) })
		})
		b.Run(fmt.Sprintf("apply-json/n=%d", n), func(b *testing.B) {
			cpuLoop(b, func() {
				if _, err := apply(docJSON, cmdJSON); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// cpuLoop runs fn b.N times and reports, beside ns/op (wall time), the
// process's CPU time per call (cpu-ns/op, all threads: the collector's
// too): on a machine shared with other work the wall time counts the
// waits for a core, the CPU time does not.
func cpuLoop(b *testing.B, fn func()) {
	b.ReportAllocs()
	c0 := cpuNow()
	for b.Loop() {
		fn()
	}
	b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
}

func cpuNow() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

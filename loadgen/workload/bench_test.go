package workload

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkNext draws hot-page commands on an 80-node page, the size a
// hot page settles at: the generator's own cost per operation.
func BenchmarkNext(b *testing.B) {
	d := startDoc(b, 80)
	spec, _ := Named("hot-page")
	rng := rand.New(rand.NewPCG(1, 1))
	var cur Cursor
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		spec.Next(rng, Context{Doc: d, ID: fmt.Sprint(i)}, &cur)
	}
}

package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/subspace/kbkit/internal/jsonscan"
	"github.com/subspace/kbkit/kbcore"
)

// sameParse fails unless parseDoc and kbcore.ParseDoc agree on b: the
// same error text, or documents with the same canonical form.
func sameParse(t *testing.T, b []byte) {
	t.Helper()
	want, werr := kbcore.ParseDoc(b)
	got, gerr := parseDoc(b)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) {
		t.Fatalf("%q:\nParseDoc error %v\nparseDoc error %v", b, werr, gerr)
	}
	if werr == nil {
		wj, _ := want.MarshalJSON()
		gj, _ := got.MarshalJSON()
		if !bytes.Equal(wj, gj) {
			t.Fatalf("%q:\nParseDoc %s\nparseDoc %s", b, wj, gj)
		}
	}
}

// mutate makes one small edit to b that JSON decoders disagree on, if
// any: bytes that end strings, escapes, structure, case, duplicates.
func mutate(r *rand.Rand, b []byte) []byte {
	b = append([]byte(nil), b...)
	if len(b) == 0 {
		return b
	}
	i := r.IntN(len(b))
	bits := [][]byte{{'"'}, {'\\'}, []byte(`\n`), []byte(`\u00e9`), []byte(`\ud800`), {'{'}, {'}'}, {'['}, {']'}, {','}, {':'},
		{' '}, []byte("null"), {'0'}, {0x80}, {0xff}, {0x01}, []byte(`"ID"`), []byte(`"text":"x",`), []byte(`"kind":null,`)}
	switch r.IntN(3) {
	case 0:
		return append(b[:i], b[i+1:]...)
	case 1:
		return append(b[:i], append(append([]byte(nil), bits[r.IntN(len(bits))]...), b[i:]...)...)
	default:
		b[i] = bits[r.IntN(len(bits))][0]
		return b
	}
}

// TestParseDocFast: the fast path takes the canonical documents (else it
// would be no fast path) and agrees with kbcore.ParseDoc on them and on
// thousands of near misses.
func TestParseDocFast(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(7, 7))}
	r := rand.New(rand.NewPCG(8, 8))
	fast := 0
	for i := 0; i < 400; i++ {
		d := g.doc("p1", g.pick(titles), 10)
		b, _ := d.MarshalJSON()
		s := scanner{jsonscan.Scanner{B: b}}
		if _, _, ok := s.doc(); ok {
			fast++
		} else {
			t.Fatalf("the fast path refused a canonical document: %s", b)
		}
		sameParse(t, b)
		for k := 0; k < 20; k++ {
			m := b
			for j := r.IntN(3); j >= 0; j-- {
				m = mutate(r, m)
			}
			sameParse(t, m)
		}
	}
	t.Logf("%d of 400 canonical documents took the fast path", fast)
	for _, b := range []string{`{}`, `{"nodes":null}`, `{"page":null}`, `{"nodes":[],"page":{"id":"p1","title":"T"}} x`,
		`{"nodes":[{"id":"a","rank":"a0","text":"x"}],"page":{"id":"p1","title":"T"}}`,
		`{"nodes":[{"id":"a","rank":"a0"}],"page":{"id":"p1","title":"T"}}`,
		`{"nodes":[{"id":"a","rank":"a0","text":"x","kind":"code","outputs":[{"mime":"m"}]}],"page":{"id":"p1","title":"T"}}`,
		`{"nodes":[{"id":"a","rank":"a0","text":"x","kind":"table","cells":{"A1":"1","A1":"2"}}],"page":{"id":"p1","title":"T"}}`,
		`{"nodes":[{"id":"a","rank":"a0","text":"x"},{"id":"a","rank":"a1","text":"y"}],"page":{"id":"p1","title":"T"}}`,
		`{"nodes":[],"page":{"id":"p1","title":"T","aliases":null,"merged_into":""}}`} {
		sameParse(t, []byte(b))
	}
}

// FuzzParseDoc holds parseDoc to kbcore.ParseDoc on any input.
func FuzzParseDoc(f *testing.F) {
	g := gen{rand.New(rand.NewPCG(9, 9))}
	for i := 0; i < 20; i++ {
		b, _ := g.doc("p1", g.pick(titles), 6).MarshalJSON()
		f.Add(b)
	}
	f.Fuzz(sameParse)
}

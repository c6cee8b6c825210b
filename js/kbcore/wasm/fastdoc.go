package main

import (
	"github.com/subspace/kbkit/internal/jsonscan"
	"github.com/subspace/kbkit/kbcore"
)

// parseDoc is kbcore.ParseDoc with a fast path for the documents the
// package is sent on every call: kbcore.ParseDoc decodes each node with
// its own strict encoding/json decoder, which in WebAssembly costs far
// more than the reducer (make wasm-bench). The fast path reads exactly
// the shapes whose meaning is obvious (objects of distinct known keys
// spelt as the canonical form spells them, strings that are valid
// Unicode, null where the canonical form allows it) into the same page
// record and nodes and hands them to kbcore.NewDoc, as ParseDoc does;
// anything else goes to kbcore.ParseDoc itself: same documents, same
// errors. TestParseDocFast and FuzzParseDoc hold the two to each other.
func parseDoc(b []byte) (kbcore.Doc, error) {
	s := scanner{jsonscan.Scanner{B: b}}
	p, nodes, ok := s.doc()
	if !ok {
		return kbcore.ParseDoc(b)
	}
	return kbcore.NewDoc(p, nodes)
}

// scanner is the module's JSON scanner; its strings are read with Text,
// which decodes escapes and is false on lone surrogates, control
// characters and invalid UTF-8 (where encoding/json would substitute
// U+FFFD).
type scanner struct{ jsonscan.Scanner }

// cells reads an object of cell name -> value, every value a string.
func (s *scanner) cells(m map[string]string) bool {
	if !s.Eat('{') {
		return false
	}
	if s.Eat('}') {
		return true
	}
	for {
		k, ok := s.Text()
		if !ok || !s.Eat(':') {
			return false
		}
		v, ok := s.Text()
		if !ok {
			return false
		}
		m[k] = v
		if s.Eat(',') {
			continue
		}
		return s.Eat('}')
	}
}

func (s *scanner) doc() (p kbcore.Page, nodes []kbcore.Node, ok bool) {
	ok = s.Object([]string{"nodes", "page"}, func(k int) bool {
		if k == 1 {
			return s.page(&p)
		}
		return s.Null() || s.Array(func() bool {
			n, ok := s.node()
			nodes = append(nodes, n)
			return ok
		})
	})
	return p, nodes, ok && s.End()
}

func (s *scanner) page(p *kbcore.Page) bool {
	var v string
	var ok bool
	return s.Object([]string{"aliases", "dir", "id", "merged_into", "title"}, func(k int) bool {
		switch k {
		case 0:
			p.Aliases = []string{}
			return s.Array(func() bool {
				v, ok = s.Text()
				p.Aliases = append(p.Aliases, v)
				return ok
			})
		case 3:
			if s.Null() {
				return true
			}
			p.MergedInto, ok = s.Text()
		case 1:
			p.Dir, ok = s.Text()
		case 2:
			p.ID, ok = s.Text()
		default:
			p.Title, ok = s.Text()
		}
		return ok
	})
}

func (s *scanner) node() (n kbcore.Node, ok bool) {
	hasText := false
	ok = s.Object([]string{"cells", "id", "kind", "outputs", "parent", "rank", "text"}, func(k int) bool {
		var ok bool
		switch k {
		case 0:
			n.Cells = map[string]string{}
			return s.cells(n.Cells)
		case 1:
			n.ID, ok = s.Text()
		case 2:
			n.Kind, ok = s.Text()
		case 3:
			n.Outputs = []kbcore.Output{}
			return s.Array(func() bool {
				o, ok := s.output()
				n.Outputs = append(n.Outputs, o)
				return ok
			})
		case 4:
			if s.Null() {
				return true
			}
			n.Parent, ok = s.Text()
		case 5:
			n.Rank, ok = s.Text()
		default:
			n.Text, ok = s.Text()
			hasText = ok
		}
		return ok
	})
	return n, ok && hasText
}

// output reads {"data", "mime"}: both required, as Output.UnmarshalJSON
// requires them.
func (s *scanner) output() (o kbcore.Output, ok bool) {
	got := 0
	ok = s.Object([]string{"data", "mime"}, func(k int) bool {
		var ok bool
		if k == 0 {
			o.Data, ok = s.Text()
		} else {
			o.Mime, ok = s.Text()
		}
		got++
		return ok
	})
	return o, ok && got == 2
}

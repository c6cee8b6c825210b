package main

import (
	"unicode/utf16"
	"unicode/utf8"

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
	s := scanner{b: b}
	p, nodes, ok := s.doc()
	if !ok {
		return kbcore.ParseDoc(b)
	}
	return kbcore.NewDoc(p, nodes)
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// byte consumes c (after white space).
func (s *scanner) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string and its escapes; false on lone surrogates, control
// characters and invalid UTF-8 (encoding/json would substitute U+FFFD),
// and on anything not a string.
func (s *scanner) str() (string, bool) {
	if !s.byte('"') {
		return "", false
	}
	start, ascii := s.i, true
	var out []byte // nil while no escape was met
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			var v string
			if out == nil {
				v = string(s.b[start:s.i])
			} else {
				v = string(out)
			}
			s.i++
			if !ascii && !utf8.ValidString(v) {
				return "", false
			}
			return v, true
		case c < 0x20:
			return "", false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return "", false
			}
			if out == nil {
				out = append([]byte(nil), s.b[start:s.i]...)
			}
			e := s.b[s.i+1]
			switch e {
			case '"', '\\', '/':
			case 'b':
				e = '\b'
			case 'f':
				e = '\f'
			case 'n':
				e = '\n'
			case 'r':
				e = '\r'
			case 't':
				e = '\t'
			case 'u':
				r, n := s.u4(s.i)
				if utf16.IsSurrogate(r) {
					r2, n2 := s.u4(s.i + n)
					if r = utf16.DecodeRune(r, r2); r == utf8.RuneError || n2 == 0 {
						return "", false // a lone surrogate: encoding/json writes U+FFFD
					}
					n += n2
				}
				if n == 0 {
					return "", false
				}
				out = utf8.AppendRune(out, r)
				s.i += n
				continue
			default:
				return "", false
			}
			out = append(out, e)
			s.i += 2
			continue
		case c >= 0x80:
			ascii = false
		}
		if out != nil {
			out = append(out, c)
		}
		s.i++
	}
	return "", false
}

// u4 reads the escape \uXXXX at b[i]: the code unit and 6, or 0, 0.
func (s *scanner) u4(i int) (rune, int) {
	if i+6 > len(s.b) || s.b[i] != '\\' || s.b[i+1] != 'u' {
		return 0, 0
	}
	var r rune
	for _, c := range s.b[i+2 : i+6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, 0
		}
		r = r*16 + rune(c)
	}
	return r, 6
}

// object reads {"key": value, ...} calling field for each key, which must
// be among keys and not repeated; field reads the value.
func (s *scanner) object(keys []string, field func(k int) bool) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	var seen uint32
	for {
		name, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		k := -1
		for n, key := range keys {
			if key == name {
				k = n
			}
		}
		if k < 0 || seen&(1<<k) != 0 || !field(k) {
			return false
		}
		seen |= 1 << k
		if s.byte('}') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// array reads [v, ...] calling elem for each value.
func (s *scanner) array(elem func() bool) bool {
	if !s.byte('[') {
		return false
	}
	if s.byte(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.byte(']') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

func (s *scanner) doc() (p kbcore.Page, nodes []kbcore.Node, ok bool) {
	ok = s.object([]string{"nodes", "page"}, func(k int) bool {
		if k == 1 {
			return s.page(&p)
		}
		return s.null() || s.array(func() bool {
			n, ok := s.node()
			nodes = append(nodes, n)
			return ok
		})
	})
	s.ws()
	return p, nodes, ok && s.i == len(s.b)
}

func (s *scanner) page(p *kbcore.Page) bool {
	var v string
	var ok bool
	return s.object([]string{"aliases", "dir", "id", "merged_into", "title"}, func(k int) bool {
		switch k {
		case 0:
			p.Aliases = []string{}
			return s.array(func() bool {
				v, ok = s.str()
				p.Aliases = append(p.Aliases, v)
				return ok
			})
		case 3:
			if s.null() {
				return true
			}
			p.MergedInto, ok = s.str()
		case 1:
			p.Dir, ok = s.str()
		case 2:
			p.ID, ok = s.str()
		default:
			p.Title, ok = s.str()
		}
		return ok
	})
}

func (s *scanner) node() (n kbcore.Node, ok bool) {
	hasText := false
	ok = s.object([]string{"cells", "id", "kind", "outputs", "parent", "rank", "text"}, func(k int) bool {
		var ok bool
		switch k {
		case 0:
			n.Cells = map[string]string{}
			return s.cells(n.Cells)
		case 1:
			n.ID, ok = s.str()
		case 2:
			n.Kind, ok = s.str()
		case 3:
			n.Outputs = []kbcore.Output{}
			return s.array(func() bool {
				o, ok := s.output()
				n.Outputs = append(n.Outputs, o)
				return ok
			})
		case 4:
			if s.null() {
				return true
			}
			n.Parent, ok = s.str()
		case 5:
			n.Rank, ok = s.str()
		default:
			n.Text, ok = s.str()
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
	ok = s.object([]string{"data", "mime"}, func(k int) bool {
		var ok bool
		if k == 0 {
			o.Data, ok = s.str()
		} else {
			o.Mime, ok = s.str()
		}
		got++
		return ok
	})
	return o, ok && got == 2
}

// cells reads an object of cell name -> value, every value a string.
func (s *scanner) cells(m map[string]string) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	for {
		k, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		v, ok := s.str()
		if !ok {
			return false
		}
		m[k] = v
		if s.byte('}') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

package fuzz

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/cases"
)

// The canonical suite's inputs (spec/ADAPTER.md 3, canonical): documents
// and JSON values written as raw JSON text, every choice of spelling drawn
// too, so that the adapter's reader and its canonical writer both work:
// strings full of what canonical writers get wrong, each character
// written as itself or escaped (short escapes, \u with upper- or
// lower-case hex, surrogate pairs for non-BMP text, \/), object keys in
// any order whose UTF-16 order differs from their code point order, and
// numbers spelt every way JSON allows for one double.

// canonRunes are the characters strings are made of: every short escape
// and control characters either side of them, the characters RFC 8785
// writes as themselves although other encoders escape them (/, <, >, &,
// U+007F, U+2028, U+2029), the ends of the BMP around the surrogates, and
// non-BMP text.
var canonRunes = []string{"a", " ", "\x00", "\x01", "\b", "\t", "\n", "\x0b", "\f", "\r", "\x0e", "\x1f",
	"\"", "\\", "/", "<", ">", "&", "'", "\x7f", "\u0080", "\u009f", "\u00e9", "e\u0301", "\u2028", "\u2029",
	"\u202e", "\ufeff", "\ud7ff", "\ue000", "\uffff", "\U0001F600", "\U00010000", "\U0010FFFF", "Z", "0", "\u05e9"}

// canonKeys are object keys whose orders disagree: by UTF-16 code units
// (RFC 8785's) a non-BMP key sorts before U+E000 and U+FF61, by code
// points (or UTF-8 bytes) after them; upper case before lower case.
var canonKeys = []string{"", "a", "A", "b", "aa", "\u00e9", "\uff61", "\U0001F600", "\ue000", "\U00010000",
	"\x00", "\n", "1", "10", "2", "_", "-", "a\x00", "z"}

// canonNodeIDs sort differently bytewise (the canonical order of nodes)
// than by any other order an implementation might reach for: '-' < '0' <
// 'A' < 'Z' < '_' < 'a', and numbers compare as text.
var canonNodeIDs = []string{"a", "A", "_", "-", "0", "z", "Z", "a-b", "a_b", "ab", "aa", "n10", "n2", "n1"}

// canonCells are valid cell names whose text order is not their grid order.
var canonCells = []string{"A1", "A10", "A2", "B1", "AA1", "Z9", "AB12", "B10"}

// canonNumbers are doubles whose ECMAScript spelling has a rule of its
// own: integers up to and past 2^53 and 1e21, exponents either side of
// 1e-6, the smallest and largest doubles, negative zero.
var canonNumbers = []float64{0, math.Copysign(0, -1), 1, -1, 10, 100, 1e21, 1e20, 1e-6, 1e-7, 0.1, 0.5,
	1.5e-7, 123456789012345678901, 9007199254740992, 9007199254740993, 5e-324, 2.2250738585072014e-308,
	1.7976931348623157e308, -1.25e30, 333333333.3333333, 4.35, 123e-20, 1e23, 295147905179352830000}

// rawJSON writes JSON text, drawing each spelling from s.
type rawJSON struct {
	s *Source
	b []byte
}

// str writes v as a JSON string, each character as itself or escaped.
func (w *rawJSON) str(v string) {
	w.b = append(w.b, '"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			if w.s.Chance(20) {
				w.u(r)
			} else {
				w.b = append(w.b, '\\', byte(r))
			}
		case r < 0x20:
			short := map[rune]byte{'\b': 'b', '\t': 't', '\n': 'n', '\f': 'f', '\r': 'r'}[r]
			if short != 0 && w.s.Chance(60) {
				w.b = append(w.b, '\\', short)
			} else {
				w.u(r)
			}
		case r == '/' && w.s.Chance(30):
			w.b = append(w.b, '\\', '/')
		case w.s.Chance(escapeOdds(r)):
			w.u(r)
		default:
			w.b = utf8.AppendRune(w.b, r)
		}
	}
	w.b = append(w.b, '"')
}

// escapeOdds is how often (in percent) a character that needs no escape
// is escaped all the same: ASCII rarely, so that cases stay readable.
func escapeOdds(r rune) int {
	if r < utf8.RuneSelf {
		return 3
	}
	return 20
}

// u writes r as \u escapes (a surrogate pair beyond the BMP), its hex in
// lower or upper case.
func (w *rawJSON) u(r rune) {
	units := []rune{r}
	if r > 0xFFFF {
		a, b := utf16.EncodeRune(r)
		units = []rune{a, b}
	}
	upper := w.s.Chance(50)
	for _, c := range units {
		h := fmt.Sprintf("%04x", c)
		if upper {
			h = strings.ToUpper(h)
		}
		w.b = append(w.b, `\u`+h...)
	}
}

// object writes the members in an order drawn from s.
func (w *rawJSON) object(keys []string, value func(k string)) {
	order := slices.Clone(keys)
	for i := len(order) - 1; i > 0; i-- {
		j := w.s.Intn(i + 1)
		order[i], order[j] = order[j], order[i]
	}
	w.b = append(w.b, '{')
	for i, k := range order {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(k)
		w.b = append(w.b, ':')
		value(k)
	}
	w.b = append(w.b, '}')
}

// number writes a double in a spelling drawn from s (each one JSON
// reads back as the same double).
func (w *rawJSON) number() {
	var f float64
	switch {
	case w.s.Chance(60):
		f = Pick(w.s, canonNumbers)
	case w.s.Chance(50):
		f = float64(w.s.Intn(1<<30)) * math.Pow(10, float64(w.s.Intn(40)-20))
	default:
		f = math.Float64frombits(uint64(w.s.Intn(1<<31))<<33 | uint64(w.s.Intn(1<<31))<<2)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 0
		}
	}
	if w.s.Chance(20) {
		f = -f
	}
	spell := []string{strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'e', -1, 64),
		strconv.FormatFloat(f, 'E', -1, 64), strconv.FormatFloat(f, 'e', 20, 64)}
	if a := math.Abs(f); a == 0 || a >= 1e-7 && a < 1e25 {
		p := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(p, ".") {
			p += ".0"
		}
		spell = append(spell, p, p+"00")
	}
	out := Pick(w.s, spell)
	if g, err := strconv.ParseFloat(out, 64); err != nil || g != f {
		out = spell[0]
	}
	w.b = append(w.b, out...)
}

// canonText is a string of canonRunes.
func canonText(s *Source) string {
	var b strings.Builder
	s.List(70, 8, func(int) { b.WriteString(Pick(s, canonRunes)) })
	return b.String()
}

// value writes a JSON value nested at most depth levels more.
func (w *rawJSON) value(depth int) {
	kinds := []string{"string", "number", "literal", "object", "array"}
	weights := []int{35, 30, 10, 15, 10}
	if depth <= 0 {
		weights = []int{45, 40, 15, 0, 0}
	}
	switch pickWeighted(w.s, kinds, weights) {
	case "string":
		w.str(canonText(w.s))
	case "number":
		w.number()
	case "literal":
		w.b = append(w.b, Pick(w.s, []string{"null", "true", "false"})...)
	case "object":
		var keys []string
		w.s.List(60, 5, func(int) {
			k := canonText(w.s)
			if w.s.Chance(70) {
				k = Pick(w.s, canonKeys)
			}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		})
		w.object(keys, func(string) { w.value(depth - 1) })
	default:
		w.b = append(w.b, '[')
		w.s.List(60, 4, func(i int) {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.value(depth - 1)
		})
		w.b = append(w.b, ']')
	}
}

// command writes a logged command {id, type, payload} (or, with seq, an
// event's data {cmd, seq}), the shape a server writes on the wire.
func (w *rawJSON) command(event bool) {
	if event {
		w.object([]string{"cmd", "seq"}, func(k string) {
			if k == "seq" {
				w.b = strconv.AppendInt(w.b, int64(w.s.Intn(1000)), 10)
				return
			}
			w.command(false)
		})
		return
	}
	w.object([]string{"id", "type", "payload"}, func(k string) {
		switch k {
		case "id":
			w.str(Pick(w.s, []string{"c1", "3f0c8f1e-6a2b-4c1d-9e7f-0a1b2c3d4e5f", canonText(w.s)}))
		case "type":
			w.str(Pick(w.s, append(slices.Clone(kbcore.Types), canonText(w.s))))
		default:
			var keys []string
			w.s.List(70, 4, func(int) {
				if k := Pick(w.s, append([]string{"node", "text", "title", "aliases"}, canonKeys...)); !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			})
			w.object(keys, func(string) { w.value(1) })
		}
	})
}

// doc writes a valid document: a tree of nodes with distinct ids and
// ranks, every node field present, and a page record.
func (w *rawJSON) doc() {
	var ids []string
	w.s.List(75, 6, func(int) {
		if id := Pick(w.s, canonNodeIDs); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	})
	w.object([]string{"nodes", "page"}, func(k string) {
		if k == "page" {
			w.page()
			return
		}
		w.b = append(w.b, '[')
		for i, id := range ids {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.node(id, ids[:i], rankKeys[i])
		}
		w.b = append(w.b, ']')
	})
}

// node writes one node record, its parent one of earlier (or none).
func (w *rawJSON) node(id string, earlier []string, rank string) {
	kind := pickWeighted(w.s, []string{kbcore.KindText, kbcore.KindCode, kbcore.KindTable}, []int{60, 20, 20})
	keys := []string{"id", "kind", "parent", "rank", "text"}
	switch kind {
	case kbcore.KindCode:
		keys = append(keys, "outputs")
	case kbcore.KindTable:
		keys = append(keys, "cells")
	}
	w.object(keys, func(k string) {
		switch k {
		case "id":
			w.str(id)
		case "kind":
			w.str(kind)
		case "rank":
			w.str(rank)
		case "text":
			w.str(canonText(w.s))
		case "parent":
			if len(earlier) == 0 || w.s.Chance(50) {
				w.b = append(w.b, "null"...)
			} else {
				w.str(Pick(w.s, earlier))
			}
		case "outputs":
			w.b = append(w.b, '[')
			w.s.List(60, 3, func(i int) {
				if i > 0 {
					w.b = append(w.b, ',')
				}
				w.object([]string{"data", "mime"}, func(k string) {
					if k == "mime" {
						w.str(Pick(w.s, []string{"text/plain", "text/html", "image/svg+xml"}))
						return
					}
					w.str(canonText(w.s))
				})
			})
			w.b = append(w.b, ']')
		default:
			var cells []string
			w.s.List(70, 5, func(int) {
				if c := Pick(w.s, canonCells); !slices.Contains(cells, c) {
					cells = append(cells, c)
				}
			})
			w.object(cells, func(string) { w.str(canonText(w.s)) })
		}
	})
}

// page writes a page record.
func (w *rawJSON) page() {
	w.object([]string{"aliases", "dir", "id", "merged_into", "title"}, func(k string) {
		switch k {
		case "aliases":
			w.b = append(w.b, '[')
			w.s.List(40, 3, func(i int) {
				if i > 0 {
					w.b = append(w.b, ',')
				}
				w.str(canonText(w.s))
			})
			w.b = append(w.b, ']')
		case "id":
			w.str(cases.DefaultPage["id"].(string))
		case "merged_into":
			if w.s.Chance(80) {
				w.b = append(w.b, "null"...)
			} else {
				w.str(otherPage)
			}
		default:
			w.str(canonText(w.s))
		}
	})
}

// genCanonicalCase draws a canonical case: a document, a logged command
// or an event's data (the shapes a server writes), or any value.
func genCanonicalCase(s *Source) cases.Case {
	w := &rawJSON{s: s}
	key := "value"
	switch pickWeighted(s, []string{"doc", "command", "event", "value"}, []int{35, 15, 10, 40}) {
	case "doc":
		key = "doc"
		w.doc()
	case "command":
		w.command(false)
	case "event":
		w.command(true)
	default:
		w.value(3)
	}
	return cases.Case{When: map[string]any{key: json.RawMessage(w.b)}}
}

// expectCanonical fills in the reference's canonical text.
func expectCanonical(ctx context.Context, ref cases.Reference, c *cases.Case) error {
	var req cases.CanonicalRequest
	if doc, ok := c.When["doc"].(json.RawMessage); ok {
		req.Doc = doc
	} else if v, ok := c.When["value"].(json.RawMessage); ok {
		req.Value = v
	}
	text, err := ref.Canonical(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalid, err)
	}
	c.Then = map[string]any{"canonical": text}
	return nil
}

// canonicalWhat is "doc" or "value": the kind of a canonical case's input.
func canonicalWhat(c cases.Case) string {
	if _, ok := c.When["doc"]; ok {
		return "doc"
	}
	return "value"
}

// canonicalFeatures are the escapes and characters the reference's
// canonical text holds, and the kind of input.
func canonicalFeatures(c cases.Case) []string {
	text, _ := c.Then["canonical"].(string)
	out := []string{"canonical:" + canonicalWhat(c)}
	for _, f := range []string{`\"`, `\\`, `\b`, `\t`, `\n`, `\f`, `\r`, `\u00`, "\x7f", "\u2028", "\u2029",
		"<", "/", "e+", "e-", "\U0001F600", "\U00010000", "\ue000", "-0"} {
		if strings.Contains(text, f) {
			out = append(out, "canonical:"+canonicalWhat(c)+":"+strconv.Quote(f))
		}
	}
	return out
}

// canonicalEntry is a canonical case as an entry of spec/canonical.json's
// cases, its input as it was sent.
func canonicalEntry(c cases.Case) string {
	what := canonicalWhat(c)
	in, _ := c.When[what].(json.RawMessage)
	var text strings.Builder
	enc := json.NewEncoder(&text)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(c.Then["canonical"])
	id, _ := json.Marshal(strings.TrimPrefix(c.ID, cases.CanonicalPrefix))
	return fmt.Sprintf("    {\"id\": %s, %q: %s,\n     \"canonical\": %s}\n", id, what, in, strings.TrimSpace(text.String()))
}

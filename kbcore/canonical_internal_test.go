package kbcore

import (
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"
	"pgregory.net/rapid"

	"github.com/subspace/kbkit/internal/jsonscan"
)

// The oracle: the document shapes as encoding/json writes them, before
// canonical.go wrote them by hand; jcs.Transform of their bytes is what
// the hand-written encoder must produce.

type docJSON struct {
	Nodes []nodeJSON `json:"nodes"`
	Page  pageJSON   `json:"page"`
}

func (n Node) toJSON() nodeJSON {
	text := n.Text
	j := nodeJSON{ID: n.ID, Kind: n.Kind, Rank: n.Rank, Text: &text}
	if j.Kind == "" {
		j.Kind = KindText
	}
	if n.Parent != "" {
		p := n.Parent
		j.Parent = &p
	}
	switch j.Kind {
	case KindCode:
		o := n.Outputs
		if o == nil {
			o = []Output{}
		}
		j.Outputs = &o
	case KindTable:
		c := n.Cells
		if c == nil {
			c = map[string]string{}
		}
		j.Cells = &c
	}
	return j
}

func (p Page) toJSON() pageJSON {
	j := pageJSON{Aliases: p.Aliases, Dir: p.Dir, ID: p.ID, Title: p.Title}
	if j.Aliases == nil {
		j.Aliases = []string{}
	}
	if p.MergedInto != "" {
		m := p.MergedInto
		j.MergedInto = &m
	}
	return j
}

func oracleDoc(t interface{ Fatal(...any) }, d Doc) []byte {
	j := docJSON{Nodes: []nodeJSON{}, Page: d.page.toJSON()}
	for _, n := range d.Nodes() {
		j.Nodes = append(j.Nodes, n.toJSON())
	}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	c, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// byteRuleText draws text that meets every escaping rule of RFC 8785:
// HTML characters, quotes, backslashes, U+2028/9, control characters,
// DEL, non-BMP text, combining marks, right-to-left text, U+FFFD.
func byteRuleText() *rapid.Generator[string] {
	pieces := []string{"a", "Z", " ", "<", ">", "&", `"`, `\`, "/", "\u2028", "\u2029", "\x00", "\x01", "\b", "\t", "\n",
		"\f", "\r", "\x1f", "\x7f", "\u0080", "é", "e\u0301", "\u05e9\u05dc\u05d5\u05dd", "\u202e", "😀", "\U0001F469\u200d\U0001F4BB",
		"\U00010000", "\ufeff", "\uffff", "\ufffd", "[[", "]]", "#", "$"}
	return rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		s := ""
		for i := 0; i < n; i++ {
			s += rapid.SampledFrom(pieces).Draw(t, "piece")
		}
		return s
	})
}

// TestRapidDocIsJCS: a document's bytes are jcs.Transform of its
// encoding/json form, for text that exercises every escape.
func TestRapidDocIsJCS(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		txt := byteRuleText()
		p := Page{ID: "p", Title: "T" + txt.Draw(t, "title"), Dir: txt.Draw(t, "dir")}
		for i := rapid.IntRange(0, 3).Draw(t, "aliases"); i > 0; i-- {
			p.Aliases = append(p.Aliases, "A"+txt.Draw(t, "alias"))
		}
		var nodes []Node
		for i, id := range []string{"b", "a", "c-1", "A_2"}[:rapid.IntRange(0, 4).Draw(t, "nodes")] {
			n := Node{ID: id, Rank: "a" + string(rune('0'+i)), Text: txt.Draw(t, "text")}
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 1:
				n.Kind = KindCode
				for k := rapid.IntRange(0, 2).Draw(t, "outputs"); k > 0; k-- {
					n.Outputs = append(n.Outputs, Output{Mime: txt.Draw(t, "mime"), Data: txt.Draw(t, "data")})
				}
			case 2:
				n.Kind = KindTable
				n.Cells = map[string]string{}
				for _, c := range []string{"B1", "A10", "A2", "AA1"}[:rapid.IntRange(0, 4).Draw(t, "cells")] {
					n.Cells[c] = txt.Draw(t, "cell")
				}
			}
			nodes = append(nodes, n)
		}
		d, err := NewDoc(p, nodes)
		if err != nil {
			t.Skip(err)
		}
		got, _ := d.MarshalJSON()
		if want := oracleDoc(t, d); string(got) != string(want) {
			t.Fatalf("MarshalJSON\n got %q\nwant %q", got, want)
		}
		back, err := ParseDoc(got)
		if err != nil {
			t.Fatalf("%s does not parse: %v", got, err)
		}
		if again, _ := back.MarshalJSON(); string(again) != string(got) {
			t.Fatalf("parsed back and written again\n got %q\nwant %q", again, got)
		}
	})
}

// drawJSON draws the text of a JSON value: canonical or not (white space,
// keys out of order, escapes, numbers in every form), sometimes invalid.
func drawJSON(t *rapid.T, depth int) string {
	ws := rapid.SampledFrom([]string{"", "", "", " ", "\n"}).Draw(t, "ws")
	switch k := rapid.IntRange(0, 9).Draw(t, "kind"); {
	case k == 0:
		return ws + rapid.SampledFrom([]string{"null", "true", "false", "nul", "{", "[1,]", `"\ud800"`, `{"a":1,"a":2}`}).Draw(t, "lit")
	case k == 1:
		return ws + rapid.SampledFrom([]string{"0", "-0", "1", "-1", "10", "007", "1.0", "1.5", "1e3", "1E-7", "1e21", "1e-6", "123456789012345678",
			"9007199254740993", "0.1", "-1.25e+30", "5e-324", "1e400", "100000000000000000000"}).Draw(t, "num")
	case k <= 4:
		s, _ := json.Marshal(byteRuleText().Draw(t, "str"))
		return ws + rapid.SampledFrom([]string{string(s), `"\u003c\/\u00e9\ud83d\ude00"`, `"\u001F\u000b"`}).Draw(t, "s")
	case depth > 2:
		return "1"
	case k <= 6:
		n := rapid.IntRange(0, 3).Draw(t, "len")
		s := "["
		for i := 0; i < n; i++ {
			if i > 0 {
				s += ","
			}
			s += drawJSON(t, depth+1)
		}
		return ws + s + "]"
	default:
		keys := []string{"a", "b", "node", "text", "é", "\uffff", "😀", "\u00e0", "A"}
		n := rapid.IntRange(0, 4).Draw(t, "members")
		s := "{"
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			key := rapid.SampledFrom(keys).Draw(t, "key")
			if seen[key] {
				continue
			}
			seen[key] = true
			if len(s) > 1 {
				s += ","
			}
			kb, _ := json.Marshal(key)
			s += string(kb) + ws + ":" + drawJSON(t, depth+1)
		}
		return ws + s + "}"
	}
}

// TestRapidCanonicalIsJCS: Canonical agrees with jcs.Transform on every
// value (an error exactly when jcs errs), and its fast path only keeps
// bytes jcs would not change.
func TestRapidCanonicalIsJCS(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := []byte(drawJSON(t, 0))
		want, werr := jcs.Transform(in)
		got, gerr := Canonical(in)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%q: Canonical error %v, jcs error %v", in, gerr, werr)
		}
		if string(got) != string(want) {
			t.Fatalf("%q: Canonical %q, jcs %q", in, got, want)
		}
	})
}

// TestRapidCommandIsJCS: a logged command's bytes (AppendCommand, after
// whatever b holds) are jcs.Transform of its encoding/json form, for ids
// and types that exercise every escape and any canonical object payload.
func TestRapidCommandIsJCS(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		txt := byteRuleText()
		payload, err := Canonical([]byte(`{"node":` + drawJSON(t, 1) + `}`))
		if err != nil {
			t.Skip(err)
		}
		c := Command{ID: txt.Draw(t, "id"), Type: txt.Draw(t, "type"), Payload: payload}
		b, err := json.Marshal(struct {
			ID      string          `json:"id"`
			Payload json.RawMessage `json:"payload"`
			Type    string          `json:"type"`
		}{c.ID, c.Payload, c.Type})
		if err != nil {
			t.Fatal(err)
		}
		want, err := jcs.Transform(b)
		if err != nil {
			t.Fatal(err)
		}
		prefix := rapid.SampledFrom([]string{"", `"cmd":`}).Draw(t, "prefix")
		if got := AppendCommand([]byte(prefix), c); string(got) != prefix+string(want) {
			t.Fatalf("AppendCommand\n got %q\nwant %q", got, prefix+string(want))
		}
	})
}

// FuzzCanonical: Canonical never panics and agrees with jcs.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":"<&>"}`, `[1e21,-0,0.1]`, `"\u2028"`, `{"a":{"b":[null,true]}}`, `{"a":1,"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, werr := jcs.Transform(in)
		got, gerr := Canonical(in)
		if werr == nil && gerr == nil && string(got) != string(want) {
			t.Fatalf("%q: Canonical %q, jcs %q", in, got, want)
		}
		if jsonscan.IsCanonical(in) && werr != nil {
			t.Fatalf("%q: the fast path keeps what jcs refuses: %v", in, werr)
		}
	})
}

// BenchmarkDocMarshal: the hand-written canonical encoder against the
// route it replaced plus RFC 8785 (encoding/json, then jcs.Transform), on
// a 200-node page with byte-rule text.
func BenchmarkDocMarshal(b *testing.B) {
	var nodes []Node
	for i := 0; i < 200; i++ {
		nodes = append(nodes, Node{ID: "n" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Rank: "a" + string(rune('0'+i%10)) + string(rune('a'+i/10)),
			Text: "cash: $610,000 <b>&amp;</b> \u2028 😀 line " + string(rune('a'+i%26))})
	}
	d, err := NewDoc(Page{ID: "p", Title: "Budget"}, nodes)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("kbcore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = d.MarshalJSON()
		}
	})
	b.Run("encoding-json+jcs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = oracleDoc(b, d)
		}
	})
}

// BenchmarkCanonicalPayload: Canonical on a payload already canonical
// (the fast path the server takes for every command) and on one that is
// not (jcs.Transform).
func BenchmarkCanonicalPayload(b *testing.B) {
	for _, c := range []struct{ name, p string }{
		{"canonical", `{"node":"n1","text":"cash: $610,000 <b>&amp;</b> é"}`},
		{"escaped", `{"text":"cash: $610,000 \u003cb\u003e\u0026amp;\u003c/b\u003e \u00e9","node":"n1"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := []byte(c.p)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonical(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package kbcore

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"pgregory.net/rapid"
)

// drawJSONString draws a JSON string token: mostly plain, sometimes with
// escapes, control characters, non-ASCII or invalid UTF-8, or broken.
func drawJSONString(t *rapid.T, label string) string {
	switch rapid.IntRange(0, 9).Draw(t, label+"-kind") {
	case 0:
		return `"a\u0062c"`
	case 1:
		return `"tab\tin"` // a raw control character: invalid JSON
	case 2:
		return "\"caf\xc3\xa9\""
	case 3:
		return "\"bad\xff\""
	case 4:
		return `"unterminated`
	case 5:
		return `"quote\"in"`
	default:
		s := rapid.StringMatching(`[a-zA-Z0-9 _<>&\[\]#:$,.-]{0,12}`).Draw(t, label)
		return `"` + s + `"`
	}
}

// drawPayload draws the bytes of a payload: objects of known, unknown,
// differently cased and repeated keys, with string, null and other values,
// white space, and sometimes not an object or trailing data.
func drawPayload(t *rapid.T) []byte {
	keys := []string{"node", "text", "after", "parent", "kind", "rank", "cell", "value", "into", "Node", "TEXT", "junk"}
	ws := func(label string) string {
		return rapid.SampledFrom([]string{"", "", "", " ", "\n\t"}).Draw(t, label)
	}
	switch rapid.IntRange(0, 19).Draw(t, "shape") {
	case 0:
		return []byte(rapid.SampledFrom([]string{"", "null", "[]", `"x"`, "{", "{}", " {} ", "{}x", "{} {}", `{"node":"a"`, `{"node":"a",}`, `{,}`, "7"}).Draw(t, "odd"))
	}
	var b strings.Builder
	b.WriteString(ws("ws0") + "{")
	n := rapid.IntRange(0, 5).Draw(t, "fields")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(ws("ws1") + "," + ws("ws2"))
		}
		b.WriteString(ws("ws3") + `"` + rapid.SampledFrom(keys).Draw(t, "key") + `"` + ws("ws4") + ":" + ws("ws5"))
		switch rapid.IntRange(0, 9).Draw(t, "value") {
		case 0:
			b.WriteString("null")
		case 1:
			b.WriteString(rapid.SampledFrom([]string{"1", "true", `{"a":1}`, `["x"]`, "nul", "nullx"}).Draw(t, "other"))
		default:
			b.WriteString(drawJSONString(t, "str"))
		}
	}
	b.WriteString(ws("ws6") + "}" + ws("ws7"))
	if rapid.IntRange(0, 15).Draw(t, "trail?") == 0 {
		b.WriteString(rapid.SampledFrom([]string{"x", "{}", ",", "null"}).Draw(t, "trail"))
	}
	return []byte(b.String())
}

// flatTargets makes a fresh payload of each registry type whose payload
// the fast decoder handles (flatOf).
func flatTargets(t interface{ Fatalf(string, ...any) }) []func() any {
	var mks []func() any
	for _, typ := range Types {
		v, _ := NewPayload(typ)
		if flatOf(v) != nil {
			mks = append(mks, func() any { v, _ := NewPayload(typ); return v })
		}
	}
	if len(mks) < 6 {
		t.Fatalf("only %d flat payload types", len(mks))
	}
	return mks
}

// TestRapidFastDecodeIsStrict: whenever the fast decoder takes a payload,
// the strict decoder accepts it too and gives the same value; when it
// declines, it leaves its target zero.
func TestRapidFastDecodeIsStrict(t *testing.T) {
	targets := flatTargets(t)
	taken := 0
	rapid.Check(t, func(t *rapid.T) {
		b := drawPayload(t)
		for _, mk := range targets {
			fast, slow, zero := mk(), mk(), mk()
			ok := decodeFast(b, fast)
			if ok {
				taken++
			}
			err := decodeStrict(b, slow)
			switch {
			case ok && err != nil:
				t.Fatalf("%T: fast took %q, strict refuses it: %v", fast, b, err)
			case ok && !reflect.DeepEqual(fast, slow):
				t.Fatalf("%T of %q: fast %+v, strict %+v", fast, b, fast, slow)
			case !ok && !reflect.DeepEqual(fast, zero):
				t.Fatalf("%T of %q: fast declined but wrote %+v", fast, b, fast)
			}
		}
	})
	t.Logf("the fast decoder took %d payloads", taken)
	if taken == 0 {
		t.Fatal("the fast decoder took no payload")
	}
}

// TestFastDecodeTakesTheWireShapes: the payloads the generator and the
// reducer write go through the fast path.
func TestFastDecodeTakesTheWireShapes(t *testing.T) {
	for _, c := range []struct {
		b string
		v any
	}{
		{`{"node":"n1","text":"the quick"}`, new(EditText)},
		{`{"node":"n1"}`, new(NodeRef)},
		{`{"after":"n1","text":""}`, new(CreateAfter)},
		{`{"after":null,"node":"n1","parent":"p"}`, new(MoveNode)},
		{`{"node":"t","cell":"A1","value":"=B1"}`, new(SetCell)},
	} {
		if !decodeFast([]byte(c.b), c.v) {
			t.Errorf("%T %s: not taken by the fast path", c.v, c.b)
		}
	}
}

// TestRapidFastEncodeIsCanonical: the fast encoder writes the RFC 8785
// form of json.Marshal's bytes (jcs.Transform), or declines.
func TestRapidFastEncodeIsCanonical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := func(label string) *string {
			if rapid.IntRange(0, 5).Draw(t, label+"-nil") == 0 {
				return nil
			}
			v := rapid.OneOf(rapid.StringMatching(`[a-zA-Z0-9 _<>&"\\-]{0,10}`), rapid.String(), byteRuleText()).Draw(t, label)
			return &v
		}
		for _, p := range []any{
			EditText{Node: s("node"), Text: s("text")},
			NodeRef{Node: s("ref")},
			MoveNode{Node: s("mnode"), Parent: nullable(s("parent")), After: nullable(s("after")), Rank: s("rank")},
		} {
			m, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			want, err := jcs.Transform(m)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeFast(p); got != nil && string(got) != string(want) {
				t.Fatalf("%T %+v: fast %s, jcs %s", p, p, got, want)
			}
		}
	})
}

// TestRapidApplyDocIsApply: the window's fold (no inverse) gives Apply's
// document, accepted or rejected.
func TestRapidApplyDocIsApply(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d, _ := NewDoc(Page{ID: "p", Title: "P"}, nil)
		ids := []string{"a", "b", "c", "d", "e"}
		for i := rapid.IntRange(1, 40).Draw(t, "steps"); i > 0; i-- {
			id := rapid.SampledFrom(ids).Draw(t, "id")
			other := rapid.SampledFrom(append(ids, "")).Draw(t, "other")
			typ := rapid.SampledFrom([]string{TypeCreateAfter, TypeCreateAfter, TypeEditText, TypeMoveNode, TypeIndent, TypeOutdent, TypeDelete, TypeSetCell}).Draw(t, "type")
			var payload string
			switch typ {
			case TypeCreateAfter:
				payload = `{"node":"` + id + `","text":"x"`
				if other != "" {
					payload += `,"` + rapid.SampledFrom([]string{"after", "parent"}).Draw(t, "where") + `":"` + other + `"`
				}
				payload += `,"kind":"` + rapid.SampledFrom([]string{"text", "table"}).Draw(t, "kind") + `"}`
			case TypeEditText:
				payload = `{"node":"` + id + `","text":"` + rapid.StringMatching(`[a-z <]{0,5}`).Draw(t, "text") + `"}`
			case TypeMoveNode:
				payload = `{"node":"` + id + `","parent":null,"after":` + map[bool]string{true: "null", false: `"` + other + `"`}[other == ""] + `}`
			case TypeSetCell:
				payload = `{"node":"` + id + `","cell":"A1","value":"1"}`
			default:
				payload = `{"node":"` + id + `"}`
			}
			c := Command{ID: "c", Type: typ, Payload: json.RawMessage(payload)}
			res := Apply(d, c)
			got := applyDoc(d, c)
			if !got.Equal(res.Doc) {
				t.Fatalf("%s %s: applyDoc %s, Apply %s", typ, payload, mustMarshal(got), mustMarshal(res.Doc))
			}
			if res.Rejected != nil && !got.Same(d) {
				t.Fatalf("%s %s rejected, but applyDoc did not return the input", typ, payload)
			}
			d = res.Doc
		}
	})
}

func mustMarshal(d Doc) string {
	b, _ := d.MarshalJSON()
	return string(b)
}

// FuzzDecodeFast: on any bytes, the fast payload decoder takes only what
// the strict decoder decodes to the same value, and leaves its target
// zero otherwise.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range []string{`{"node":"n1","text":"x"}`, `{"after":null,"node":"n","parent":"p"}`, `{"node":"t","cell":"A1","value":"=B1"}`, `{}`, ` {"text":"caf\u00e9"} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, mk := range flatTargets(t) {
			fast, slow, zero := mk(), mk(), mk()
			ok := decodeFast(b, fast)
			err := decodeStrict(b, slow)
			switch {
			case ok && (err != nil || !reflect.DeepEqual(fast, slow)):
				t.Fatalf("%T of %q: fast %+v; strict %+v, %v", fast, b, fast, slow, err)
			case !ok && !reflect.DeepEqual(fast, zero):
				t.Fatalf("%T of %q: fast declined but wrote %+v", fast, b, fast)
			}
		}
	})
}

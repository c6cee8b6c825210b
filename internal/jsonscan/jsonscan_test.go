package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"pgregory.net/rapid"
)

var errNull = errors.New("null")

func TestSkip(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{}`, true}, {` [ 1 , -0.5e+3 , "x\u00e9\n" , true , false , null , {"a" : [ ] } ] `, true},
		{`{"a":1,}`, false}, {`[1 2]`, false}, {`01`, false}, {`1.`, false}, {`-`, false}, {`1e`, false},
		{`"\x"`, false}, {`"\u12g4"`, false}, {"\"tab\tin\"", false}, {`tru`, false}, {`nul`, false}, {`t`, false},
		{`"unterminated`, false}, {`{"a"}`, false}, {`{1:2}`, false}, {"\"\xff\"", true}, {``, false},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), true},
		{strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2), false},
	} {
		s := Scanner{B: []byte(c.in)}
		v, ok := s.Skip()
		got := ok && s.End()
		if got != c.want {
			t.Errorf("Skip(%q) = %v, want %v", c.in, got, c.want)
		}
		if got && string(v) != strings.TrimSpace(c.in) {
			t.Errorf("Skip(%q) returned %q", c.in, v)
		}
	}
}

func TestObject(t *testing.T) {
	keys := []string{"a", "b"}
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{}`, true}, {` { "a" : "x" , "b":null } `, true}, {`{"b":"y"}`, true},
		{`{"a":"x","a":"y"}`, false}, {`{"c":"x"}`, false}, {`{"A":"x"}`, false}, {`{"\u0061":"x"}`, false},
		{`{"a":"x",}`, false}, {`{"a":"x"`, false}, {`["a"]`, false},
	} {
		s := Scanner{B: []byte(c.in)}
		got := s.Object(keys, func(int) bool { _, ok := s.Skip(); return ok }) && s.End()
		if got != c.want {
			t.Errorf("Object(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`"plain"`, "plain", true}, {`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t", true},
		{`"\u00e9\u20ac\ud83d\ude00"`, "é€😀", true}, {`"\ud83d"`, "", false}, {`"\ude00x"`, "", false},
		{`"\ud83d\u0041"`, "", false}, {"\"caf\xc3\xa9\"", "café", true}, {"\"bad\xff\"", "", false},
		{`"\u00"`, "", false}, {`"\q"`, "", false}, {`x`, "", false},
	} {
		s := Scanner{B: []byte(c.in)}
		got, ok := s.Text()
		if ok != c.ok || got != c.want {
			t.Errorf("Text(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// drawToken draws JSON-like text: mostly valid values, with white space,
// escapes, surrogates, odd numbers, invalid UTF-8, and broken tokens.
func drawToken(t *rapid.T, depth int) string {
	ws := rapid.SampledFrom([]string{"", "", " ", "\n\t"}).Draw(t, "ws")
	n := 9
	if depth > 3 {
		n = 6
	}
	switch rapid.IntRange(0, n).Draw(t, "kind") {
	case 0:
		return ws + rapid.SampledFrom([]string{"null", "true", "false", "nul", "truex", "t"}).Draw(t, "lit")
	case 1:
		return ws + rapid.SampledFrom([]string{"0", "-0", "12", "-3.25e+10", "1E5", "01", "1.", "-", ".5", "1e", "123456789012345678", "1234567890123456789", "-9.0"}).Draw(t, "num")
	case 2, 3, 4:
		return ws + drawString(t)
	case 5:
		return rapid.SampledFrom([]string{"", ",", "]", "}", ":", "\x00", "\xff"}).Draw(t, "junk")
	case 6:
		return ws + `"` + rapid.StringMatching(`[a-z]{0,4}`).Draw(t, "s") + `"`
	case 7, 8:
		var b strings.Builder
		b.WriteString(ws + "[")
		for i := rapid.IntRange(0, 3).Draw(t, "n"); i > 0; i-- {
			b.WriteString(drawToken(t, depth+1))
			if i > 1 {
				b.WriteString(rapid.SampledFrom([]string{",", ",", " ,", ""}).Draw(t, "comma"))
			}
		}
		b.WriteString(ws + "]")
		return b.String()
	default:
		var b strings.Builder
		b.WriteString(ws + "{")
		for i := rapid.IntRange(0, 3).Draw(t, "n"); i > 0; i-- {
			b.WriteString(drawString(t) + rapid.SampledFrom([]string{":", " : ", ""}).Draw(t, "colon") + drawToken(t, depth+1))
			if i > 1 {
				b.WriteString(rapid.SampledFrom([]string{",", ", ", ""}).Draw(t, "comma"))
			}
		}
		b.WriteString(ws + "}")
		return b.String()
	}
}

func drawString(t *rapid.T) string {
	parts := []string{"a", "Z", " ", "é", "€", "😀", `\"`, `\\`, `\/`, `\n`, `\t`, `\b`, `\f`, `\r`, `\u0041`, `\u00e9`,
		`\u001f`, `\uD83D\uDE00`, `\ud83d`, `\ude00`, `\u12`, `\x`, "\t", "\x7f", "\xff", "\xc3", "<", "&", "\u2028"}
	var b strings.Builder
	b.WriteByte('"')
	for i := rapid.IntRange(0, 6).Draw(t, "len"); i > 0; i-- {
		b.WriteString(rapid.SampledFrom(parts).Draw(t, "part"))
	}
	if rapid.IntRange(0, 20).Draw(t, "unterminated") > 0 {
		b.WriteByte('"')
	}
	return b.String()
}

// Skip accepts exactly what json.Valid accepts (the values drawn nest
// less deeply than MaxDepth), and Str, Text, Plain and Int decode as
// encoding/json decodes.
func TestRapidScannerIsEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := []byte(drawToken(t, 0) + rapid.SampledFrom([]string{"", " ", "x", ",1"}).Draw(t, "tail"))
		s := Scanner{B: in}
		_, ok := s.Skip()
		if got := ok && s.End(); got != json.Valid(in) {
			t.Fatalf("Skip(%q) = %v, json.Valid %v", in, got, json.Valid(in))
		}
		var sp *string
		uerr := json.Unmarshal(in, &sp)
		if uerr == nil && sp == nil {
			uerr = errNull // null: no string
		}
		var str string
		if sp != nil {
			str = *sp
		}
		s = Scanner{B: in}
		if _, _, ok := s.Str(); (ok && s.End()) != (uerr == nil) {
			t.Fatalf("Str(%q) = %v, json.Unmarshal: %v", in, ok, uerr)
		}
		s = Scanner{B: in}
		if v, ok := s.Text(); ok && s.End() && (uerr != nil || v != str) {
			t.Fatalf("Text(%q) = %q, json.Unmarshal %q, %v", in, v, str, uerr)
		}
		s = Scanner{B: in}
		if v, ok := s.Plain(); ok && s.End() && (uerr != nil || string(v) != str) {
			t.Fatalf("Plain(%q) = %q, json.Unmarshal %q, %v", in, v, str, uerr)
		}
		var n int64
		nerr := json.Unmarshal(in, &n)
		s = Scanner{B: in}
		if v, ok := s.Int(); ok && s.End() && (nerr != nil || v != n) {
			t.Fatalf("Int(%q) = %d, json.Unmarshal %d, %v", in, v, n, nerr)
		}
		s = Scanner{B: in}
		var num *json.Number
		isNum := json.Unmarshal(in, &num) == nil && num != nil && bytes.TrimSpace(in)[0] != '"' // json.Number also takes "12"
		if ok := s.Number(); (ok && s.End()) != isNum {
			t.Fatalf("Number(%q) = %v", in, ok)
		}
	})
}

// Text declines only what encoding/json would not give back as written:
// a string it decodes without U+FFFD substitutions is one Text reads.
func TestRapidTextTakesWhatRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := []byte(drawString(t))
		var str string
		if json.Unmarshal(in, &str) != nil || strings.ContainsRune(str, '\uFFFD') {
			return
		}
		s := Scanner{B: in}
		if v, ok := s.Text(); !ok || v != str {
			t.Fatalf("Text(%q) = %q, %v; json.Unmarshal %q", in, v, ok, str)
		}
	})
}

// PlainJSON is true exactly when json.Marshal writes s as itself.
func TestRapidPlainJSONIsMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		b, _ := json.Marshal(s)
		same := string(b) == `"`+s+`"`
		ascii := !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x7f })
		if PlainJSON(s) && !same || !PlainJSON(s) && same && ascii {
			t.Fatalf("PlainJSON(%q) = %v, json.Marshal %s", s, PlainJSON(s), b)
		}
	})
}

// CompactPlain is true only where json.Marshal of the raw value copies
// it unchanged.
func TestRapidCompactPlainIsMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := []byte(drawToken(t, 0))
		if !CompactPlain(in) {
			return
		}
		b, err := json.Marshal(json.RawMessage(in))
		if err != nil || !bytes.Equal(b, in) {
			t.Fatalf("CompactPlain(%q), json.Marshal %s, %v", in, b, err)
		}
	})
}

// What IsCanonical calls canonical, RFC 8785 (jcs) leaves unchanged.
func TestRapidIsCanonicalIsJCS(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := []byte(drawToken(t, 0))
		out, err := jcs.Transform(in)
		if IsCanonical(in) && (err != nil || !bytes.Equal(out, in)) {
			t.Fatalf("IsCanonical(%q), jcs gives %q, %v", in, out, err)
		}
	})
}

func TestUTF16Less(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"a", "b", true}, {"b", "a", false}, {"a", "a", false}, {"", "a", true}, {"a", "ab", true},
		{"😀", "\uE000", true}, {"\uE000", "😀", false}, {"é", "😀", true}} {
		if got := UTF16Less(c.a, c.b); got != c.want {
			t.Errorf("UTF16Less(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// FuzzScanner: no input makes any primitive panic, and Skip is json.Valid.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",null]}`, `"\ud83d\ude00"`, `-12`, `{"node":"a","text":"b"}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := Scanner{B: in}
		_, ok := s.Skip()
		if ok && s.End() != json.Valid(in) && bytes.Count(in, []byte("[")) < MaxDepth && bytes.Count(in, []byte("{")) < MaxDepth {
			t.Fatalf("Skip(%q) disagrees with json.Valid", in)
		}
		for _, read := range []func(*Scanner) bool{
			func(s *Scanner) bool { _, _, ok := s.Str(); return ok },
			func(s *Scanner) bool { _, ok := s.Text(); return ok },
			func(s *Scanner) bool { _, ok := s.Plain(); return ok },
			func(s *Scanner) bool { _, ok := s.Int(); return ok },
			func(s *Scanner) bool { return s.Number() },
			func(s *Scanner) bool { return s.Object([]string{"a"}, func(int) bool { _, ok := s.Skip(); return ok }) },
			func(s *Scanner) bool { return s.Array(func() bool { _, ok := s.Skip(); return ok }) },
			func(s *Scanner) bool { _, ok := s.CanonStr(); return ok },
		} {
			for i := 0; i <= len(in); i++ {
				read(&Scanner{B: in, I: i})
			}
		}
		IsCanonical(in)
		CompactPlain(in)
	})
}

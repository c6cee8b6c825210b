package fuzz

import "strings"

// textFragments are what node text is made of, simplest first: the
// tokenizer's syntax (spec/tokenizer.md), words, numbers and labels, and
// the Unicode an implementation gets wrong (combining marks, precomposed
// and decomposed forms, bidi and zero-width controls, white space beyond
// ASCII, code points next to the surrogates and at the ends of the planes,
// astral characters, other scripts' digits).
var textFragments = []string{
	"a", " ", "[[", "]]", "#", "x", "((", "))", "\n", ":", "Budget", "todo",
	"$5", "12", ".", "-", "_", "/", "`", "key", "1,000", "-3.5", "%", "=",
	"A1", "[", "]", "(", ")", "\t", "\r", "é", "e\u0301", "\u0301", "\u0308",
	"U\u0308", "Ü", "\u202e", "\u200f", "\u2067", "\u200d", "\u200b",
	"\u00a0", "\u3000", "\u2028", "\u0085", "\ufeff", "\ud7ff", "\ue000",
	"\ufffd", "\uffff", "\U00010000", "\U0010ffff", "\U0001f600", "Ω", "日本",
	"\u0661\u0662", "\u0967", "€", "£", "\x7f", "\x01", "ǅ", "İ", "ß",
	// Labels: a key at a line start, ':' and a space, a value that may be
	// a number with currency, groups, a sign, a percent.
	"key: ", "\ncash: ", "total:\t", "€5", "£1,000", "12%", "¥3", "₹7.5", "$ 5", "+1.", ".5", "1,00",
}

// genText draws a node text or a tokenizer input: fragments, sometimes
// a long run of one fragment (deep nesting, long tags, long labels).
func genText(s *Source) string {
	var b strings.Builder
	s.List(80, 24, func(int) {
		f := Pick(s, textFragments)
		if s.Chance(4) {
			f = strings.Repeat(f, 2+s.Intn(300))
		}
		b.WriteString(f)
	})
	return b.String()
}

// formulaFragments are what table cell values are made of. The last one
// spends half the range budget (spec/tokenizer.md 6: 100 ranges of 50
// cells, the same 50 each time, so the deps stay short): a range after it
// shows how areas are counted, and a second copy spends the budget to the
// last cell. The other ranges are a few cells each, and a repeated
// fragment runs its words together, so without it no formula comes near
// the budget.
var formulaFragments = []string{
	"=", "A1", "+", "[[P]]", ":", "cash", "B2:C3", "1", " ", "SUM(", ")",
	"[[", "]]", "a", "Z99", "AA10", "A0", "$", "-", "*", ",", "é", "e\u0301",
	"[[Budget]]:total", "\u00a0", "\u202e", "a1", "A", "9", "_", ".", "\U0001f600",
	"=[[P]]:k", "[[x]]:", "A1:A1", "B1:A2", strings.Repeat("A1:A50+", 100),
}

// genFormula draws a table cell value: mostly a formula (a leading "=").
func genFormula(s *Source) string {
	var b strings.Builder
	if !s.Chance(15) {
		b.WriteString("=")
	}
	s.List(80, 16, func(int) {
		f := Pick(s, formulaFragments)
		if s.Chance(3) {
			f = strings.Repeat(f, 2+s.Intn(100))
		}
		b.WriteString(f)
	})
	return b.String()
}

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
	// Escapes (rule 1): a backslash before whatever fragment follows it,
	// or ending the text; repeated, a run of escaped backslashes.
	"\\",
	// A code span of 64 backticks with a link inside (rule 2): a repeated
	// backtick fragment rarely draws two runs of one length, so without it
	// no span longer than a few backticks opens.
	strings.Repeat("`", 64) + "[[c]]" + strings.Repeat("`", 64),
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

// numberValues are label values at the edges of the number rule
// (spec/tokenizer.md 5, Numbers), with what a float parser takes and the
// rule does not: an exponent, a hex float, infinity, digit underscores.
var numberValues = []string{
	"5", "-3.5", "1,000", "1,234.5", "+1.", ".5", "5.", "1,00", "0,5", "$5", "12%",
	"- 5", "--5", "+", "-", "$", "1e5", "0x1p4", "Inf", "1_000", "00.50", "-0",
}

// genLabelText draws a text that starts with a label line whose value is
// one of numberValues, then sometimes more lines: labels of fragments
// rarely end their line right after a number.
func genLabelText(s *Source) string {
	t := "key: " + Pick(s, numberValues)
	if s.Chance(30) {
		t += "\n" + genText(s)
	}
	return t
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

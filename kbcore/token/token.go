package token

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Ref kinds.
const (
	KindLink  = "link"  // [[Title]]
	KindTag   = "tag"   // #tag or #[[Title]]
	KindEmbed = "embed" // ((Title))
)

// Ref is one reference to a page found in a text or a formula.
type Ref struct {
	Kind  string `json:"kind" yaml:"kind"`   // "link" | "tag" | "embed"
	Title string `json:"title" yaml:"title"` // inner text, trimmed; not normalised (callers NFC-normalise to compare)
	Start int    `json:"-" yaml:"-"`         // byte offset of the token's first byte ('[', '#', '(')
	End   int    `json:"-" yaml:"-"`         // byte offset just past the token
}

// Label is a "key: value" line of a node's text. Number is set when the
// value reads as a number (see spec/tokenizer.md).
type Label struct {
	Key    string   `json:"key" yaml:"key"`
	Text   string   `json:"text" yaml:"text"`
	Number *float64 `json:"number,omitempty" yaml:"number,omitempty"`
}

// Dep is the target of one formula dependency edge: either a cell of the
// same table, or a label of a page.
type Dep struct {
	Cell  string `json:"cell,omitempty" yaml:"cell,omitempty"`   // "A1" (same table), upper-cased, no '$'
	Page  string `json:"page,omitempty" yaml:"page,omitempty"`   // with Label: [[Page]]:label
	Label string `json:"label,omitempty" yaml:"label,omitempty"` // label key as written
}

// Tokens is what Tokenize extracts from a node's text.
type Tokens struct {
	// Refs in the order their opening "[[", "((" or "#" appears in the
	// text. Spans nest (an outer link contains its inner one) but never
	// cross; a caller rewriting spans must rewrite inner ones first or
	// skip the outer ones.
	Refs []Ref
	// Label is the first label line of the text, or nil.
	Label *Label
}

// Formula is what TokenizeFormula extracts from a table cell value.
type Formula struct {
	Refs []Ref // every [[Page]] link, in order
	Deps []Dep // dependency targets in order of first appearance, without duplicates
}

// NormalizeTitle returns s in Unicode Normalization Form C. Titles compare
// equal when their NFC forms are byte-equal (case-sensitive).
func NormalizeTitle(s string) string {
	return norm.NFC.String(s)
}

// IsBareTag reports whether s can be written as "#"+s, that is whether
// Tokenize("#"+s) yields exactly one tag ref whose title is s and whose span
// covers the whole string.
func IsBareTag(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	end, nonDigit := scanTagRun(s, 0)
	return end == len(s) && nonDigit
}

// TagSpelling returns how a tag to title is written: "#title" when title is
// a valid bare tag, else "#[[title]]". It does not check that title can be
// written inside brackets at all (no line break, no "]]", no backtick).
func TagSpelling(title string) string {
	if IsBareTag(title) {
		return "#" + title
	}
	return "#[[" + title + "]]"
}

// Tokenize extracts the refs and the first label of a node's text.
func Tokenize(text string) Tokens {
	var s scanner
	s.text = text
	s.run()
	var out Tokens
	if len(s.refs) > 0 {
		if !s.sorted {
			slices.SortFunc(s.refs, func(a, b Ref) int { return a.Start - b.Start })
		}
		out.Refs = slices.Clip(s.refs)
	}
	out.Label = s.label
	return out
}

// opener kinds on the bracket stack.
const (
	openLink uint8 = iota
	openTag
	openEmbed
)

type opener struct {
	kind  uint8
	start int // offset of '[' / '#' / '('
	inner int // offset of the first byte after the opening delimiter
}

type scanner struct {
	text  string
	refs  []Ref
	stack []opener
	label *Label

	// sorted stays true while refs are emitted in Start order.
	sorted bool
	// nBracket and nParen count the "[[" (link and tag) and "((" openers on
	// the stack, so that a closer with nothing to match costs O(1).
	nBracket, nParen int
	// noCloser has bit k set once a search for a closing run of k
	// backticks failed: later searches start further right, so they would
	// fail too. Runs of 64 or more use noCloserBig.
	noCloser    uint64
	noCloserBig map[int]bool
	// No fixed buffers for refs and stack: a slice into the scanner itself
	// made every scanner escape to the heap (about a kilobyte per call,
	// refs or not); appending allocates only for a text that has them.
}

// special marks the bytes the scanner must look at; everything else is
// skipped in a tight loop.
var special = [256]bool{
	'\\': true, '`': true, '[': true, ']': true, '(': true, ')': true,
	'#': true, '\n': true, '\r': true,
}

func (s *scanner) run() {
	text := s.text
	n := len(text)
	s.sorted = true
	s.label = parseLabel(text, 0)
	i := 0
	for i < n {
		c := text[i]
		if !special[c] {
			i++
			continue
		}
		switch c {
		case '\\':
			if i+1 < n && isASCIIPunct(text[i+1]) {
				i += 2
			} else {
				i++
			}
		case '`':
			k := runLen(text, i, '`')
			j := s.findBacktickCloser(i+k, k)
			if j < 0 {
				i += k
				continue
			}
			if strings.ContainsAny(text[i+k:j], "\r\n") {
				s.clearStack()
			}
			i = j + k
		case '[':
			k := runLen(text, i, '[')
			for p := i + k&1; p < i+k; p += 2 {
				s.push(opener{kind: openLink, start: p, inner: p + 2})
			}
			i += k
		case '(':
			k := runLen(text, i, '(')
			for p := i + k&1; p < i+k; p += 2 {
				s.push(opener{kind: openEmbed, start: p, inner: p + 2})
			}
			i += k
		case ']', ')':
			if i+1 < n && text[i+1] == c {
				s.close(c, i)
				i += 2
			} else {
				i++
			}
		case '#':
			i = s.hash(i)
		case '\n', '\r':
			s.clearStack()
			i++
			if s.label == nil {
				s.label = parseLabel(text, i)
			}
		}
	}
}

func (s *scanner) push(o opener) {
	if o.kind == openEmbed {
		s.nParen++
	} else {
		s.nBracket++
	}
	s.stack = append(s.stack, o)
}

func (s *scanner) clearStack() {
	s.stack = s.stack[:0]
	s.nBracket, s.nParen = 0, 0
}

// close handles the closer "]]" or "))" at i: it matches the nearest
// opener of the same family, discarding the openers above it.
func (s *scanner) close(c byte, i int) {
	if c == ']' && s.nBracket == 0 || c == ')' && s.nParen == 0 {
		return
	}
	for m := len(s.stack) - 1; m >= 0; m-- {
		o := s.stack[m]
		if (o.kind == openEmbed) != (c == ')') {
			continue
		}
		for _, d := range s.stack[m:] {
			if d.kind == openEmbed {
				s.nParen--
			} else {
				s.nBracket--
			}
		}
		s.stack = s.stack[:m]
		title := strings.TrimSpace(s.text[o.inner:i])
		if title == "" {
			return
		}
		kind := KindLink
		switch o.kind {
		case openTag:
			kind = KindTag
		case openEmbed:
			kind = KindEmbed
		}
		s.emit(Ref{Kind: kind, Title: title, Start: o.start, End: i + 2})
		return
	}
}

func (s *scanner) emit(r Ref) {
	if l := len(s.refs); l > 0 && s.refs[l-1].Start > r.Start {
		s.sorted = false
	}
	s.refs = append(s.refs, r)
}

// hash handles the '#' at i and returns where scanning continues.
func (s *scanner) hash(i int) int {
	text := s.text
	if !tagPosition(text, i) {
		return i + 1
	}
	if i+1 < len(text) && text[i+1] == '[' {
		k := runLen(text, i+1, '[')
		if k&1 == 1 {
			// "#[" followed by openers: the '#' is plain text.
			return i + 1
		}
		s.push(opener{kind: openTag, start: i, inner: i + 3})
		for p := i + 3; p < i+1+k; p += 2 {
			s.push(opener{kind: openLink, start: p, inner: p + 2})
		}
		return i + 1 + k
	}
	if i+1 < len(text) && text[i+1] == '.' {
		return i + 1
	}
	end, nonDigit := scanTagRun(text, i+1)
	if end == i+1 || !nonDigit {
		return i + 1
	}
	s.emit(Ref{Kind: KindTag, Title: text[i+1 : end], Start: i, End: end})
	return end
}

// tagPosition reports whether a '#' at i may start a tag: at the start of
// the text, or after a White_Space character or a '(' that does not follow
// a ']' (the "](" of a Markdown link: "[docs](#install)" is a link to a
// fragment, not a tag).
func tagPosition(text string, i int) bool {
	if i == 0 {
		return true
	}
	c := text[i-1]
	if c < utf8.RuneSelf {
		if c == '(' {
			return i < 2 || text[i-2] != ']'
		}
		return c == ' ' || c >= '\t' && c <= '\r'
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return unicode.IsSpace(r)
}

// scanTagRun reads tag characters from p. It returns the end of the tag
// once trailing dots are stripped, and whether the tag has a character
// other than a decimal digit or '.'.
func scanTagRun(text string, p int) (end int, nonDigit bool) {
	end = p
	j := p
	for j < len(text) {
		c := text[j]
		if c < utf8.RuneSelf {
			switch {
			case c == '.':
				j++
				continue
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-', c == '/':
				nonDigit = true
			default:
				return end, nonDigit
			}
			j++
			end = j
			continue
		}
		r, w := utf8.DecodeRuneInString(text[j:])
		switch {
		case unicode.IsDigit(r):
		case unicode.IsLetter(r), unicode.IsMark(r):
			nonDigit = true
		default:
			return end, nonDigit
		}
		j += w
		end = j
	}
	return end, nonDigit
}

// runLen returns the length of the run of c starting at i.
func runLen(text string, i int, c byte) int {
	j := i
	for j < len(text) && text[j] == c {
		j++
	}
	return j - i
}

// findBacktickCloser returns the offset of the first run of exactly k
// backticks at or after p, or -1.
func (s *scanner) findBacktickCloser(p, k int) int {
	if k < 64 {
		if s.noCloser&(1<<k) != 0 {
			return -1
		}
	} else if s.noCloserBig[k] {
		return -1
	}
	text := s.text
	for p < len(text) {
		j := strings.IndexByte(text[p:], '`')
		if j < 0 {
			break
		}
		p += j
		m := runLen(text, p, '`')
		if m == k {
			return p
		}
		p += m
	}
	if k < 64 {
		s.noCloser |= 1 << k
	} else {
		if s.noCloserBig == nil {
			s.noCloserBig = make(map[int]bool)
		}
		s.noCloserBig[k] = true
	}
	return -1
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

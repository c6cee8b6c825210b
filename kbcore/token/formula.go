package token

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxRangeCells is how many cells the ranges of one formula may expand to
// in total; a range that would exceed the remaining budget contributes only
// its two corner cells.
const MaxRangeCells = 10000

// TokenizeFormula extracts the links and dependencies of a table cell value.
// Only a value whose first byte is '=' is a formula; any other value yields
// an empty Formula.
func TokenizeFormula(value string) Formula {
	if value == "" || value[0] != '=' {
		return Formula{}
	}
	f := formulaScanner{budget: MaxRangeCells}
	n := len(value)
	i := 1
	for i < n {
		c := value[i]
		switch {
		case c == '"':
			j := strings.IndexByte(value[i+1:], '"')
			if j < 0 {
				i = n // an unclosed string runs to the end of the value
			} else {
				i += j + 2
			}
		case c == '[':
			end, title := formulaLink(value, i)
			if end < 0 {
				i++
				continue
			}
			f.out.Refs = append(f.out.Refs, Ref{Kind: KindLink, Title: title, Start: i, End: end})
			i = end
			if i < n && value[i] == ':' {
				if kend := formulaKey(value, i+1); kend > 0 {
					f.add(Dep{Page: title, Label: value[i+1 : kend]})
					i = kend
				}
			}
		case c < utf8.RuneSelf:
			if !isWordByte(c) {
				i++
				continue
			}
			i = f.word(value, i)
		default:
			r, w := utf8.DecodeRuneInString(value[i:])
			if !isWordRune(r) {
				i += w
				continue
			}
			i = f.word(value, i)
		}
	}
	return f.out
}

type formulaScanner struct {
	out    Formula
	seen   map[Dep]struct{} // built once Deps grows past a linear scan
	budget int
}

func (f *formulaScanner) add(d Dep) {
	if f.seen != nil {
		if _, ok := f.seen[d]; ok {
			return
		}
		f.seen[d] = struct{}{}
	} else {
		for _, e := range f.out.Deps {
			if e == d {
				return
			}
		}
		if len(f.out.Deps) >= 32 {
			f.seen = make(map[Dep]struct{}, 64)
			for _, e := range f.out.Deps {
				f.seen[e] = struct{}{}
			}
			f.seen[d] = struct{}{}
		}
	}
	f.out.Deps = append(f.out.Deps, d)
}

// word handles the word starting at i (a cell, a range, or anything else)
// and returns its end.
func (f *formulaScanner) word(v string, i int) int {
	end := wordEnd(v, i)
	col, row, ok := parseCell(v[i:end])
	if !ok || end < len(v) && v[end] == '(' {
		return end
	}
	if end+1 < len(v) && v[end] == ':' {
		end2 := wordEnd(v, end+1)
		col2, row2, ok2 := parseCell(v[end+1 : end2])
		if ok2 && !(end2 < len(v) && v[end2] == '(') {
			f.addRange(col, row, col2, row2)
			return end2
		}
	}
	f.add(Dep{Cell: cellName(col, row)})
	return end
}

func (f *formulaScanner) addRange(c1, r1, c2, r2 int) {
	cmin, cmax := min(c1, c2), max(c1, c2)
	rmin, rmax := min(r1, r2), max(r1, r2)
	// int64: the largest range has about 1.8e11 cells, more than a 32-bit int.
	area64 := int64(cmax-cmin+1) * int64(rmax-rmin+1)
	if area64 > int64(f.budget) {
		f.add(Dep{Cell: cellName(c1, r1)})
		f.add(Dep{Cell: cellName(c2, r2)})
		return
	}
	area := int(area64)
	f.budget -= area
	// One string holds every name of the range; the deps slice it.
	var names []byte
	ends := make([]int, 0, area)
	for r := rmin; r <= rmax; r++ {
		for c := cmin; c <= cmax; c++ {
			names = appendCellName(names, c, r)
			ends = append(ends, len(names))
		}
	}
	all := string(names)
	f.out.Deps = slices.Grow(f.out.Deps, area)
	start := 0
	for _, end := range ends {
		f.add(Dep{Cell: all[start:end]})
		start = end
	}
}

// formulaLink matches [[title]] at i where the inner text has no '[', ']',
// '\r' or '\n' and is not blank. It returns the end and the trimmed title,
// or -1.
func formulaLink(v string, i int) (int, string) {
	if i+1 >= len(v) || v[i+1] != '[' {
		return -1, ""
	}
	for j := i + 2; j < len(v); j++ {
		switch v[j] {
		case '[', '\r', '\n':
			return -1, ""
		case ']':
			if j+1 >= len(v) || v[j+1] != ']' {
				return -1, ""
			}
			title := strings.TrimSpace(v[i+2 : j])
			if title == "" {
				return -1, ""
			}
			return j + 2, title
		}
	}
	return -1, ""
}

// formulaKey matches a label key at p: a letter, then letters, marks,
// digits and '_', where a single ' ' or '-' may join two such characters;
// at most maxKeyLen code points. It returns the key's end, or -1.
func formulaKey(v string, p int) int {
	if p >= len(v) {
		return -1
	}
	r, w := utf8.DecodeRuneInString(v[p:])
	if !unicode.IsLetter(r) {
		return -1
	}
	j := p + w
	count := 1
	for j < len(v) {
		r, w := utf8.DecodeRuneInString(v[j:])
		if isKeyRune(r) {
			j += w
			count++
		} else if (r == ' ' || r == '-') && j+1 < len(v) {
			r2, w2 := utf8.DecodeRuneInString(v[j+1:])
			if !isKeyRune(r2) {
				break
			}
			j += 1 + w2
			count += 2
		} else {
			break
		}
		if count > maxKeyLen {
			return -1
		}
	}
	return j
}

func isKeyRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
	}
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r)
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isWordByte(byte(r))
	}
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r))
}

func wordEnd(v string, i int) int {
	for i < len(v) {
		c := v[i]
		if c < utf8.RuneSelf {
			if !isWordByte(c) {
				return i
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(v[i:])
		if !isWordRune(r) {
			return i
		}
		i += w
	}
	return i
}

// parseCell reads $?[A-Za-z]{1,3}$?[1-9][0-9]{0,6} and returns the column
// (A=1 ... ZZZ=18278) and the row.
func parseCell(w string) (col, row int, ok bool) {
	i := 0
	if i < len(w) && w[i] == '$' {
		i++
	}
	letters := 0
	for i < len(w) && letters < 4 {
		c := w[i] | 0x20 // ASCII lower case
		if c < 'a' || c > 'z' {
			break
		}
		col = col*26 + int(c-'a') + 1
		letters++
		i++
	}
	if letters == 0 || letters > 3 {
		return 0, 0, false
	}
	if i < len(w) && w[i] == '$' {
		i++
	}
	if i >= len(w) || w[i] < '1' || w[i] > '9' || len(w)-i > 7 {
		return 0, 0, false
	}
	for ; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return 0, 0, false
		}
		row = row*10 + int(w[i]-'0')
	}
	return col, row, true
}

func cellName(col, row int) string {
	var buf [16]byte
	return string(appendCellName(buf[:0], col, row))
}

func appendCellName(b []byte, col, row int) []byte {
	var letters [3]byte
	i := len(letters)
	for col > 0 && i > 0 {
		col--
		i--
		letters[i] = byte('A' + col%26)
		col /= 26
	}
	b = append(b, letters[i:]...)
	return strconv.AppendInt(b, int64(row), 10)
}

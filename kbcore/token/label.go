package token

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxKeyLen is the longest label key, in code points.
const maxKeyLen = 40

// parseLabel reads the line starting at p as "key: value", or returns nil.
func parseLabel(text string, p int) *Label {
	n := len(text)
	if p >= n {
		return nil
	}
	j := p
	count := 0    // code points read so far
	keyCount := 0 // code points up to the last non-space
	keyEnd := p
	for j < n {
		c := text[j]
		if c == ':' {
			break
		}
		if c < utf8.RuneSelf {
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			case j == p:
				return nil // a key starts with a letter
			case c >= '0' && c <= '9', c == '_', c == '-':
			case c == ' ':
				count++
				j++
				continue
			default:
				return nil
			}
			j++
		} else {
			r, w := utf8.DecodeRuneInString(text[j:])
			switch {
			case unicode.IsLetter(r):
			case j == p:
				return nil
			case unicode.IsMark(r), unicode.IsDigit(r):
			default:
				return nil
			}
			j += w
		}
		count++
		keyCount = count
		keyEnd = j
		if keyCount > maxKeyLen {
			return nil
		}
	}
	// j is at ':' (or n); the separator is ':' then a space or a tab.
	if keyCount == 0 || j+1 >= n || text[j] != ':' || text[j+1] != ' ' && text[j+1] != '\t' {
		return nil
	}
	rest := text[j+1:]
	if e := strings.IndexAny(rest, "\r\n"); e >= 0 {
		rest = rest[:e]
	}
	value := strings.TrimSpace(rest)
	if value == "" {
		return nil
	}
	l := &Label{Key: text[p:keyEnd], Text: value}
	if f, ok := parseNumber(value); ok {
		l.Number = &f
	}
	return l
}

// parseNumber reads a label value as a number: currency symbols (Unicode
// category Sc) and '%' are removed, White_Space is trimmed, and what is
// left must be [+-]? (digits | d{1,3}(,ddd)+)? (.digits)? with at least one
// digit before or after the point.
func parseNumber(v string) (float64, bool) {
	var buf [64]byte
	b := buf[:0]
	for _, r := range v {
		if r == '%' || r == '$' || r >= utf8.RuneSelf && unicode.Is(unicode.Sc, r) {
			continue
		}
		b = utf8.AppendRune(b, r)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, false
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i = 1
	}
	// integer part
	start := i
	groups := false
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intDigits := i - start
	for i < len(s) && s[i] == ',' {
		// thousands separators: 1-3 digits first, then groups of exactly 3
		if intDigits == 0 || !groups && intDigits > 3 {
			return 0, false
		}
		groups = true
		g := i + 1
		for g < len(s) && s[g] >= '0' && s[g] <= '9' {
			g++
		}
		if g-(i+1) != 3 {
			return 0, false
		}
		intDigits += 3
		i = g
	}
	fracDigits := 0
	if i < len(s) && s[i] == '.' {
		i++
		f := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		fracDigits = i - f
		if fracDigits == 0 {
			return 0, false
		}
	}
	if i != len(s) || intDigits == 0 && fracDigits == 0 {
		return 0, false
	}
	if groups {
		s = strings.ReplaceAll(s, ",", "")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false // too large for a float64 (underflow rounds to 0 without error)
	}
	if f == 0 {
		f = 0 // no negative zero
	}
	return f, true
}

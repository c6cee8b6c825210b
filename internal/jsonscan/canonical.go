package jsonscan

import "unicode/utf8"

// Canonical JSON is RFC 8785 (spec/README.md section 1): no white space,
// object keys sorted by their UTF-16 code units, strings with only '"',
// '\\' and the control characters escaped (\b \t \n \f \r short, the
// others \u00xx in lower case), every other character as itself, numbers
// as ECMAScript writes them.

// IsCanonical reports whether b is one JSON value already in canonical
// form, for the shapes a payload usually has: objects with distinct keys
// in UTF-16 order, arrays, strings whose every byte is written as itself
// or escaped exactly as RFC 8785 escapes it, null, true, false and small
// integers. False means "not known to be canonical" (the caller then
// canonicalizes, which also finds the inputs that are not JSON at all).
func IsCanonical(b []byte) bool {
	c := Scanner{B: b}
	return c.canonValue(0) && c.I == len(b)
}

// maxCanonDepth bounds the recursion; deeper values are declined.
const maxCanonDepth = 32

func (c *Scanner) canonValue(depth int) bool {
	if c.I >= len(c.B) || depth > maxCanonDepth {
		return false
	}
	switch ch := c.B[c.I]; {
	case ch == '{':
		return c.canonObject(depth)
	case ch == '[':
		c.I++
		if c.I < len(c.B) && c.B[c.I] == ']' {
			c.I++
			return true
		}
		for {
			if !c.canonValue(depth+1) || c.I >= len(c.B) {
				return false
			}
			if c.B[c.I] == ']' {
				c.I++
				return true
			}
			if c.B[c.I] != ',' {
				return false
			}
			c.I++
		}
	case ch == '"':
		_, ok := c.CanonStr()
		return ok
	case ch == 'n':
		return c.Lit("null")
	case ch == 't':
		return c.Lit("true")
	case ch == 'f':
		return c.Lit("false")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return c.canonInt()
	}
	return false
}

// canonInt accepts an integer as ECMAScript writes it, below 2^53 in
// magnitude (exact in a double): no leading zeros, no "-0".
func (c *Scanner) canonInt() bool {
	start := c.I
	if c.B[c.I] == '-' {
		c.I++
	}
	digits := c.I
	for c.I < len(c.B) && c.B[c.I] >= '0' && c.B[c.I] <= '9' {
		c.I++
	}
	n := c.I - digits
	switch {
	case n == 0 || n > 15:
		return false
	case c.B[digits] == '0' && (n > 1 || digits > start):
		return false // a leading zero, or -0
	}
	return c.I == len(c.B) || (c.B[c.I] != '.' && c.B[c.I] != 'e' && c.B[c.I] != 'E')
}

// CanonStr reads a string at c.I (no white space before it) that is
// canonical as written and returns its raw content; false for anything
// else (an escape RFC 8785 would not write, a raw control character,
// invalid UTF-8).
func (c *Scanner) CanonStr() (raw []byte, ok bool) {
	if c.I >= len(c.B) || c.B[c.I] != '"' {
		return nil, false
	}
	c.I++
	start := c.I
	for c.I < len(c.B) {
		ch := c.B[c.I]
		switch {
		case ch == '"':
			raw = c.B[start:c.I]
			c.I++
			return raw, true
		case ch < 0x20:
			return nil, false
		case ch == '\\':
			if c.I+1 >= len(c.B) {
				return nil, false
			}
			switch c.B[c.I+1] {
			case '"', '\\', 'b', 't', 'n', 'f', 'r':
				c.I += 2
			case 'u':
				// Only \u00xx for a control character other than the five
				// short ones, in lower-case hex.
				if c.I+6 > len(c.B) || c.B[c.I+2] != '0' || c.B[c.I+3] != '0' || !lowerHex(c.B[c.I+4]) || !lowerHex(c.B[c.I+5]) {
					return nil, false
				}
				v := hexVal(c.B[c.I+4])<<4 | hexVal(c.B[c.I+5])
				if v >= 0x20 || v == '\b' || v == '\t' || v == '\n' || v == '\f' || v == '\r' {
					return nil, false
				}
				c.I += 6
			default:
				return nil, false
			}
		case ch >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(c.B[c.I:])
			if r == utf8.RuneError && size == 1 {
				return nil, false
			}
			c.I += size
		default:
			c.I++
		}
	}
	return nil, false
}

func lowerHex(ch byte) bool { return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') }

// canonObject accepts an object whose keys are plain (no escapes),
// distinct and in increasing UTF-16 order.
func (c *Scanner) canonObject(depth int) bool {
	c.I++ // '{'
	if c.I < len(c.B) && c.B[c.I] == '}' {
		c.I++
		return true
	}
	var prev []byte
	for n := 0; ; n++ {
		key, ok := c.CanonStr()
		if !ok || hasByte(key, '\\') {
			return false
		}
		if n > 0 && !UTF16Less(string(prev), string(key)) {
			return false // out of order, or a duplicate
		}
		prev = key
		if c.I >= len(c.B) || c.B[c.I] != ':' {
			return false
		}
		c.I++
		if !c.canonValue(depth+1) || c.I >= len(c.B) {
			return false
		}
		if c.B[c.I] == '}' {
			c.I++
			return true
		}
		if c.B[c.I] != ',' {
			return false
		}
		c.I++
	}
}

func hasByte(b []byte, x byte) bool {
	for _, ch := range b {
		if ch == x {
			return true
		}
	}
	return false
}

// UTF16Less orders strings by their UTF-16 code units (RFC 8785 section
// 3.2.3): byte order, except that characters above U+FFFF (surrogate
// pairs, 0xD800-0xDFFF) sort before U+E000-U+FFFF.
func UTF16Less(a, b string) bool {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if (ra > 0xFFFF) == (rb > 0xFFFF) {
				return ra < rb
			}
			return utf16First(ra) < utf16First(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b != ""
}

func utf16First(r rune) rune {
	if r > 0xFFFF {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

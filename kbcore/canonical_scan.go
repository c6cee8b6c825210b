package kbcore

import "unicode/utf8"

// isCanonical reports whether b is one JSON value already in canonical
// form, for the shapes a payload usually has: objects with distinct keys
// in UTF-16 order, arrays, strings whose every byte is written as itself
// or escaped exactly as RFC 8785 escapes it, null, true, false and small
// integers. False means "not known to be canonical": Canonical then asks
// jcs.Transform, which also finds the inputs that are not JSON at all.
func isCanonical(b []byte) bool {
	c := canonScan{b: b}
	return c.value(0) && c.i == len(b)
}

type canonScan struct {
	b []byte
	i int
}

// maxCanonDepth bounds the recursion; deeper values go to jcs.
const maxCanonDepth = 32

func (c *canonScan) value(depth int) bool {
	if c.i >= len(c.b) || depth > maxCanonDepth {
		return false
	}
	switch ch := c.b[c.i]; {
	case ch == '{':
		return c.object(depth)
	case ch == '[':
		c.i++
		if c.i < len(c.b) && c.b[c.i] == ']' {
			c.i++
			return true
		}
		for {
			if !c.value(depth + 1) {
				return false
			}
			if c.i >= len(c.b) {
				return false
			}
			if c.b[c.i] == ']' {
				c.i++
				return true
			}
			if c.b[c.i] != ',' {
				return false
			}
			c.i++
		}
	case ch == '"':
		_, ok := c.str()
		return ok
	case ch == 'n':
		return c.lit("null")
	case ch == 't':
		return c.lit("true")
	case ch == 'f':
		return c.lit("false")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return c.integer()
	}
	return false
}

func (c *canonScan) lit(s string) bool {
	if len(c.b)-c.i < len(s) || string(c.b[c.i:c.i+len(s)]) != s {
		return false
	}
	c.i += len(s)
	return true
}

// integer accepts an integer as ECMAScript writes it, below 2^53 in
// magnitude (exact in a double): no leading zeros, no "-0".
func (c *canonScan) integer() bool {
	start := c.i
	if c.b[c.i] == '-' {
		c.i++
	}
	digits := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	n := c.i - digits
	switch {
	case n == 0 || n > 15:
		return false
	case c.b[digits] == '0' && (n > 1 || digits > start):
		return false // a leading zero, or -0
	}
	if c.i < len(c.b) && (c.b[c.i] == '.' || c.b[c.i] == 'e' || c.b[c.i] == 'E') {
		return false
	}
	return true
}

// str reads a string that is canonical as written and returns its raw
// content; ok false for anything else (an escape RFC 8785 would not write,
// a raw control character, invalid UTF-8).
func (c *canonScan) str() (raw []byte, ok bool) {
	c.i++ // '"'
	start := c.i
	for c.i < len(c.b) {
		ch := c.b[c.i]
		switch {
		case ch == '"':
			raw = c.b[start:c.i]
			c.i++
			return raw, true
		case ch < 0x20:
			return nil, false
		case ch == '\\':
			if c.i+1 >= len(c.b) {
				return nil, false
			}
			switch c.b[c.i+1] {
			case '"', '\\', 'b', 't', 'n', 'f', 'r':
				c.i += 2
			case 'u':
				// Only \u00xx for a control character other than the five
				// short ones, in lower-case hex.
				if c.i+6 > len(c.b) || c.b[c.i+2] != '0' || c.b[c.i+3] != '0' || !lowerHex(c.b[c.i+4]) || !lowerHex(c.b[c.i+5]) {
					return nil, false
				}
				v := hexVal(c.b[c.i+4])<<4 | hexVal(c.b[c.i+5])
				if v >= 0x20 || v == '\b' || v == '\t' || v == '\n' || v == '\f' || v == '\r' {
					return nil, false
				}
				c.i += 6
			default:
				return nil, false
			}
		case ch >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(c.b[c.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false
			}
			c.i += size
		default:
			c.i++
		}
	}
	return nil, false
}

func lowerHex(ch byte) bool { return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') }

func hexVal(ch byte) byte {
	if ch <= '9' {
		return ch - '0'
	}
	return ch - 'a' + 10
}

// object accepts an object whose keys are plain (no escapes: a key with
// escapes goes to jcs), distinct and in increasing UTF-16 order.
func (c *canonScan) object(depth int) bool {
	c.i++ // '{'
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return true
	}
	var prev []byte
	for n := 0; ; n++ {
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			return false
		}
		key, ok := c.str()
		if !ok || hasByte(key, '\\') {
			return false
		}
		if n > 0 && !utf16Less(string(prev), string(key)) {
			return false // out of order, or a duplicate
		}
		prev = key
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return false
		}
		c.i++
		if !c.value(depth + 1) {
			return false
		}
		if c.i >= len(c.b) {
			return false
		}
		if c.b[c.i] == '}' {
			c.i++
			return true
		}
		if c.b[c.i] != ',' {
			return false
		}
		c.i++
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

package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner is a position in JSON bytes. Every method skips the white space
// before its token (except where it says otherwise) and reports false,
// leaving I where the token began or inside it, when the input is not
// what it reads.
type Scanner struct {
	B []byte
	I int
}

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// WS skips white space.
func (s *Scanner) WS() {
	for s.I < len(s.B) && IsSpace(s.B[s.I]) {
		s.I++
	}
}

// Peek returns the next byte after white space, 0 at the end.
func (s *Scanner) Peek() byte {
	s.WS()
	if s.I < len(s.B) {
		return s.B[s.I]
	}
	return 0
}

// Eat consumes c (after white space).
func (s *Scanner) Eat(c byte) bool {
	if s.Peek() == c && s.I < len(s.B) {
		s.I++
		return true
	}
	return false
}

// End reports whether only white space is left.
func (s *Scanner) End() bool {
	s.WS()
	return s.I == len(s.B)
}

// Lit consumes the literal lit (null, true, false).
func (s *Scanner) Lit(lit string) bool {
	s.WS()
	if len(s.B)-s.I >= len(lit) && string(s.B[s.I:s.I+len(lit)]) == lit {
		s.I += len(lit)
		return true
	}
	return false
}

// Null consumes the literal null.
func (s *Scanner) Null() bool { return s.Lit("null") }

// Escaped is the flag Str reports for a string with an escape.
const Escaped = 1

// Str reads a JSON string and returns its raw content (the bytes between
// the quotes, escapes as written) and its flags (Escaped). It checks the escapes and
// refuses raw control characters; it does not check UTF-8 (encoding/json
// accepts invalid UTF-8 and substitutes U+FFFD).
func (s *Scanner) Str() (raw []byte, flags uint8, ok bool) {
	if !s.Eat('"') {
		return nil, 0, false
	}
	start := s.I
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			raw = s.B[start:s.I]
			s.I++
			return raw, flags, true
		case c < 0x20:
			return nil, 0, false
		case c == '\\':
			flags |= Escaped
			if s.I+1 >= len(s.B) {
				return nil, 0, false
			}
			switch s.B[s.I+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.I += 2
			case 'u':
				if _, ok := u4(s.B, s.I); !ok {
					return nil, 0, false
				}
				s.I += 6
			default:
				return nil, 0, false
			}
		default:
			s.I++
		}
	}
	return nil, 0, false
}

// Plain reads a string without escapes or control characters whose bytes
// are valid UTF-8: one encoding/json decodes to its raw bytes exactly.
func (s *Scanner) Plain() ([]byte, bool) {
	s.WS()
	if s.I >= len(s.B) || s.B[s.I] != '"' {
		return nil, false
	}
	ascii := true
	for j := s.I + 1; j < len(s.B); j++ {
		switch c := s.B[j]; {
		case c == '"':
			v := s.B[s.I+1 : j]
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			s.I = j + 1
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// Text reads a string and decodes its escapes; false on lone surrogates
// and invalid UTF-8 (where encoding/json would substitute U+FFFD), and on
// anything not a string. A string without escapes is not copied twice.
func (s *Scanner) Text() (string, bool) {
	raw, flags, ok := s.Str()
	switch {
	case !ok:
		return "", false
	case flags&Escaped == 0:
		if !utf8.Valid(raw) {
			return "", false
		}
		return string(raw), true
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := u4(raw, i)
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2, ok := u4(raw, i)
				if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
					return "", false // a lone surrogate: encoding/json writes U+FFFD
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	if !utf8.Valid(out) {
		return "", false
	}
	return string(out), true
}

// u4 reads the escape \uXXXX at b[i]: its code unit.
func u4(b []byte, i int) (rune, bool) {
	if i < 0 || i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		if !IsHex(c) {
			return 0, false
		}
		r = r<<4 | rune(hexVal(c))
	}
	return r, true
}

// IsHex reports whether c is a hexadecimal digit.
func IsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// Int reads an integer as encoding/json reads one into an int64, for at
// most 18 digits (always in range): no leading zero, no fraction or
// exponent (encoding/json refuses those for an int64; here they are
// declined).
func (s *Scanner) Int() (int64, bool) {
	s.WS()
	j, neg := s.I, false
	if j < len(s.B) && s.B[j] == '-' {
		neg = true
		j++
	}
	start := j
	var n int64
	for j < len(s.B) && s.B[j] >= '0' && s.B[j] <= '9' && j-start < 19 {
		n = n*10 + int64(s.B[j]-'0')
		j++
	}
	digits := j - start
	if digits == 0 || digits > 18 || (digits > 1 && s.B[start] == '0') {
		return 0, false
	}
	if j < len(s.B) {
		switch s.B[j] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	s.I = j
	if neg {
		n = -n
	}
	return n, true
}

// Number skips a JSON number.
func (s *Scanner) Number() bool {
	s.WS()
	b, j := s.B, s.I
	digits := func() int {
		n := 0
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j < len(b) && b[j] == '0' {
		j++
	} else if digits() == 0 {
		return false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if digits() == 0 {
			return false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false
		}
	}
	s.I = j
	return true
}

// MaxDepth is how deeply Skip nests; deeper values are declined.
const MaxDepth = 64

// Skip skips one valid JSON value (nested at most MaxDepth deep) and
// returns its bytes: exactly what json.Valid accepts, at that depth.
func (s *Scanner) Skip() ([]byte, bool) { return s.skip(0) }

func (s *Scanner) skip(depth int) ([]byte, bool) {
	s.WS()
	if s.I >= len(s.B) || depth > MaxDepth {
		return nil, false
	}
	start := s.I
	switch c := s.B[s.I]; {
	case c == '{':
		s.I++
		if s.Eat('}') {
			return s.B[start:s.I], true
		}
		for {
			if _, _, ok := s.Str(); !ok || !s.Eat(':') {
				return nil, false
			}
			if _, ok := s.skip(depth + 1); !ok {
				return nil, false
			}
			if s.Eat(',') {
				continue
			}
			if s.Eat('}') {
				return s.B[start:s.I], true
			}
			return nil, false
		}
	case c == '[':
		s.I++
		if s.Eat(']') {
			return s.B[start:s.I], true
		}
		for {
			if _, ok := s.skip(depth + 1); !ok {
				return nil, false
			}
			if s.Eat(',') {
				continue
			}
			if s.Eat(']') {
				return s.B[start:s.I], true
			}
			return nil, false
		}
	case c == '"':
		if _, _, ok := s.Str(); !ok {
			return nil, false
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if !s.Number() {
			return nil, false
		}
	case c == 't' || c == 'f' || c == 'n':
		if !s.Lit("true") && !s.Lit("false") && !s.Null() {
			return nil, false
		}
	default:
		return nil, false
	}
	return s.B[start:s.I], true
}

// Object reads an object of known keys, each at most once and written as
// a plain string, calling field for each with the key's index (field
// reads the value); false on any other key, a repeat, or a field that
// fails. At most 32 keys.
func (s *Scanner) Object(keys []string, field func(k int) bool) bool {
	if !s.Eat('{') || len(keys) > 32 {
		return false
	}
	if s.Eat('}') {
		return true
	}
	var seen uint32
	for {
		key, ok := s.Plain()
		if !ok || !s.Eat(':') {
			return false
		}
		k := -1
		for n, name := range keys {
			if name == string(key) {
				k = n
				break
			}
		}
		if k < 0 || seen&(1<<k) != 0 || !field(k) {
			return false
		}
		seen |= 1 << k
		if s.Eat(',') {
			continue
		}
		return s.Eat('}')
	}
}

// Array reads [v, ...] calling elem for each value (elem reads it).
func (s *Scanner) Array(elem func() bool) bool {
	if !s.Eat('[') {
		return false
	}
	if s.Eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.Eat(',') {
			continue
		}
		return s.Eat(']')
	}
}

// PlainJSON reports whether json.Marshal writes s as itself in quotes:
// printable ASCII without the characters it escapes.
func PlainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// CompactPlain reports whether raw is one valid JSON value without white
// space between tokens and without bytes json.Marshal would rewrite
// (non-ASCII, <, >, &): what json.Marshal copies as it is.
func CompactPlain(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c >= 0x7f || c == '<' || c == '>' || c == '&':
			return false
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && IsSpace(c):
			return false
		}
	}
	s := Scanner{B: raw}
	_, ok := s.Skip()
	return ok && s.I == len(raw)
}

package server

import (
	"unicode/utf8"

	"github.com/subspace/kbkit/wire"
)

// checkWireText refuses, at the trust boundary, text that no store can
// hold and no client can round-trip (spec/PROTOCOL.md section 7): invalid
// UTF-8, the escape \u0000 and lone surrogate escapes (\ud800 without its
// pair). raw must be valid JSON, so a backslash can only start an escape
// inside a string. The reducer stays total on such text; the wire refuses
// it.
func checkWireText(raw []byte) *callError {
	if !utf8.Valid(raw) {
		return errorf(wire.CodeBadRequest, "input: not valid UTF-8")
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 >= len(raw) {
			break
		}
		if raw[i+1] != 'u' {
			i++ // a two-character escape: skip its second byte (it may be a backslash)
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			i++
			continue
		}
		switch {
		case r == 0:
			return errorf(wire.CodeBadRequest, "input: a string holds \\u0000 (NUL), which is not allowed")
		case r >= 0xd800 && r <= 0xdbff:
			// A high surrogate must be followed by a low one.
			if i+11 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if lo, ok := hex4(raw, i+8); ok && lo >= 0xdc00 && lo <= 0xdfff {
					i += 11
					continue
				}
			}
			return errorf(wire.CodeBadRequest, "input: a string holds a lone surrogate escape (\\u%04x), which is not allowed", r)
		case r >= 0xdc00 && r <= 0xdfff:
			return errorf(wire.CodeBadRequest, "input: a string holds a lone surrogate escape (\\u%04x), which is not allowed", r)
		}
		i += 5
	}
	return nil
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

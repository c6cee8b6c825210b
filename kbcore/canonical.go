package kbcore

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/subspace/kbkit/internal/jsonscan"
)

// Canonical JSON (spec/README.md section 1) is RFC 8785, the JSON
// Canonicalization Scheme: no white space, object keys sorted by their
// UTF-16 code units, strings with only '"', '\\' and the control
// characters escapes (\b \t \n \f \r short, the others \u00xx in lower
// case), every other character as itself (<, >, &, U+2028, U+2029 and
// non-BMP text included), numbers as ECMAScript writes them. A document
// also has its nodes sorted by id.
//
// The documents and the flat payloads are written by hand below (the hot
// paths); any other JSON value goes through github.com/gowebpki/jcs.
// canonical_test.go holds both to jcs.Transform on random values.

// ErrNotCanonicalizable is returned by Canonical for bytes that are not
// one I-JSON value: invalid JSON or UTF-8, a lone surrogate escape, a
// duplicate key, a number out of range.
var ErrNotCanonicalizable = errors.New("kbcore: not canonicalizable JSON")

// Canonical returns the canonical form of one JSON value; b itself when it
// already is canonical.
func Canonical(b []byte) ([]byte, error) {
	if jsonscan.IsCanonical(b) {
		return b, nil
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, errors.Join(ErrNotCanonicalizable, err)
	}
	return out, nil
}

// appendString appends s as a canonical JSON string. Invalid UTF-8 (which
// the wire refuses, but the reducer is total on) is written as U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendKey appends "key": (key is one of the fixed ASCII field names).
func appendKey(b []byte, key string, comma bool) []byte {
	if comma {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// appendNode appends a node record in canonical form: cells only (and
// always) on tables, outputs only (and always) on code nodes.
func appendNode(b []byte, n Node) []byte {
	kind := n.Kind
	if kind == "" {
		kind = KindText
	}
	b = append(b, '{')
	comma := false
	if kind == KindTable {
		b = appendKey(b, "cells", false)
		b = appendCells(b, n.Cells)
		comma = true
	}
	b = appendKey(b, "id", comma)
	b = appendString(b, n.ID)
	b = appendKey(b, "kind", true)
	b = appendString(b, kind)
	if kind == KindCode {
		b = appendKey(b, "outputs", true)
		b = append(b, '[')
		for i, o := range n.Outputs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendKey(append(b, '{'), "data", false)
			b = appendString(b, o.Data)
			b = appendKey(b, "mime", true)
			b = append(appendString(b, o.Mime), '}')
		}
		b = append(b, ']')
	}
	b = appendKey(b, "parent", true)
	b = appendNullable(b, n.Parent)
	b = appendKey(b, "rank", true)
	b = appendString(b, n.Rank)
	b = appendKey(b, "text", true)
	b = appendString(b, n.Text)
	return append(b, '}')
}

// appendCells appends a table's cells, keys in UTF-16 order (valid cell
// names are ASCII, where that is byte order; any other key is sorted the
// same way too).
func appendCells(b []byte, cells map[string]string) []byte {
	keys := make([]string, 0, len(cells))
	for k := range cells {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return jsonscan.UTF16Less(keys[i], keys[j]) })
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, k), ':')
		b = appendString(b, cells[k])
	}
	return append(b, '}')
}

// appendPage appends the page record in canonical form.
func appendPage(b []byte, p Page) []byte {
	b = appendKey(append(b, '{'), "aliases", false)
	b = append(b, '[')
	for i, a := range p.Aliases {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, a)
	}
	b = append(b, ']')
	b = appendKey(b, "dir", true)
	b = appendString(b, p.Dir)
	b = appendKey(b, "id", true)
	b = appendString(b, p.ID)
	b = appendKey(b, "merged_into", true)
	b = appendNullable(b, p.MergedInto)
	b = appendKey(b, "title", true)
	b = appendString(b, p.Title)
	return append(b, '}')
}

// AppendCommand appends a logged command {id, payload, type} in canonical
// form; payload must already be canonical (as the log keeps it).
func AppendCommand(b []byte, c Command) []byte {
	b = appendKey(append(b, '{'), "id", false)
	b = appendString(b, c.ID)
	b = appendKey(b, "payload", true)
	if len(c.Payload) == 0 {
		b = append(b, '{', '}')
	} else {
		b = append(b, c.Payload...)
	}
	b = appendKey(b, "type", true)
	b = appendString(b, c.Type)
	return append(b, '}')
}

// CanonicalMismatch explains how got, the bytes an implementation sent,
// differs from want, their canonical form: "" when they are equal, else
// the first difference and the RFC 8785 rule it breaks (for failure
// messages of the conformance checks).
func CanonicalMismatch(got, want []byte) string {
	if string(got) == string(want) {
		return ""
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	rest := string(got[i:])
	if j := lastBackslash(got[:i]); j >= 0 && i-j <= 6 {
		rest = string(got[j:]) // inside an escape: show it whole
	}
	rule := "object keys sorted by UTF-16 code units, a document's nodes sorted by id"
	switch {
	case hasPrefixAny(rest, `\u003c`, `\u003e`, `\u0026`, `\u003C`, `\u003E`):
		rule = "'<', '>' and '&' are written as themselves, not escaped"
	case hasPrefixAny(rest, `\u2028`, `\u2029`):
		rule = "U+2028 and U+2029 are written as themselves, not escaped"
	case hasPrefixAny(rest, `\u0008`, `\u0009`, `\u000a`, `\u000c`, `\u000d`, `\u000A`, `\u000C`, `\u000D`):
		rule = `control characters U+0008, U+0009, U+000A, U+000C and U+000D are written \b \t \n \f \r`
	case hasPrefixAny(rest, `\u00`) || hasPrefixAny(rest, `\U`):
		rule = `the other control characters are written \u00xx with lower-case hex; no other character is escaped`
	case hasPrefixAny(rest, `\/`):
		rule = `'/' is written as itself, not escaped`
	case hasPrefixAny(rest, `\u`):
		rule = "only '\"', '\\' and control characters are escaped; every other character (non-BMP included) is written as itself"
	case hasPrefixAny(rest, " ", "\n", "\t", "\r"):
		rule = "no white space between tokens"
	}
	lo := max(0, i-40)
	return fmt.Sprintf("at byte %d: sent %q, canonical %q (RFC 8785: %s)", i, clip(got[lo:], 80), clip(want[lo:], 80), rule)
}

// lastBackslash is the index of a backslash among the last 6 bytes of b
// (an escape the first difference may be inside), -1 if none.
func lastBackslash(b []byte) int {
	for j := len(b) - 1; j >= 0 && j >= len(b)-6; j-- {
		if b[j] == '\\' {
			return j
		}
	}
	return -1
}

func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if len(s) >= len(p) && s[:len(p)] == p {
			return true
		}
	}
	return false
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

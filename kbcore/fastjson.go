package kbcore

import (
	"encoding/json"
	"unicode/utf8"
)

// Fast paths of the payload JSON. The reducer decodes every payload
// strictly (decodeStrict: encoding/json, unknown fields refused, one
// value); the payloads of the frequent commands are flat objects of
// strings, and a window applies each of them at least twice (locally and
// echoed). The fast decoder below reads exactly the shapes whose meaning
// is obvious, a flat object of distinct known keys spelt as the tags are,
// each a plain string (no escapes, valid UTF-8) or null, and reports
// false on anything else, which then goes through decodeStrict as before:
// same result, same errors. fastjson_test.go checks fast == strict on
// random inputs.

// flatField is one key of a flat payload: str receives a string or nil
// (null); set, if not nil, records that the key was present.
type flatField struct {
	name string
	str  **string
	set  *bool
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// plainString reads a JSON string at b[i] ('"') without escapes or
// control characters; ok false if it is anything else.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s = b[i+1 : j]
			if !ascii && !utf8.Valid(s) {
				return nil, i, false // encoding/json would substitute U+FFFD
			}
			return s, j + 1, true
		case c == '\\' || c < 0x20:
			return nil, i, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, i, false
}

// decodeFlat fills fields from a flat JSON object, or reports false
// (then nothing it wrote counts: the caller decodes strictly into a fresh
// value).
func decodeFlat(b []byte, fields []flatField) bool {
	var seen uint32
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return false
		}
		k := -1
		for n := range fields {
			if fields[n].name == string(key) {
				k = n
				break
			}
		}
		if k < 0 || seen&(1<<k) != 0 {
			return false // unknown (or differently spelt) or repeated key
		}
		seen |= 1 << k
		j = skipSpace(b, j)
		if j >= len(b) || b[j] != ':' {
			return false
		}
		j = skipSpace(b, j+1)
		f := fields[k]
		switch {
		case j+4 <= len(b) && string(b[j:j+4]) == "null":
			*f.str = nil
			j += 4
		default:
			v, next, ok := plainString(b, j)
			if !ok {
				return false
			}
			s := string(v)
			*f.str = &s
			j = next
		}
		if f.set != nil {
			*f.set = true
		}
		j = skipSpace(b, j)
		if j >= len(b) {
			return false
		}
		switch b[j] {
		case ',':
			i = skipSpace(b, j+1)
		case '}':
			return skipSpace(b, j+1) == len(b)
		default:
			return false
		}
	}
}

// decodeFast decodes the flat payloads; false: not handled, and v is
// left the zero value it was (decode it strictly).
func decodeFast(b []byte, v any) bool {
	switch p := v.(type) {
	case *EditText:
		if decodeFlat(b, []flatField{{name: "node", str: &p.Node}, {name: "text", str: &p.Text}}) {
			return true
		}
		*p = EditText{}
	case *NodeRef:
		if decodeFlat(b, []flatField{{name: "node", str: &p.Node}}) {
			return true
		}
		*p = NodeRef{}
	case *CreateAfter:
		if decodeFlat(b, []flatField{{name: "after", str: &p.After}, {name: "parent", str: &p.Parent},
			{name: "node", str: &p.Node}, {name: "text", str: &p.Text}, {name: "kind", str: &p.Kind}, {name: "rank", str: &p.Rank}}) {
			return true
		}
		*p = CreateAfter{}
	case *MoveNode:
		if decodeFlat(b, []flatField{{name: "node", str: &p.Node}, {name: "parent", str: &p.Parent.ID, set: &p.Parent.Set},
			{name: "after", str: &p.After.ID, set: &p.After.Set}, {name: "rank", str: &p.Rank}}) {
			return true
		}
		*p = MoveNode{}
	case *SetCell:
		if decodeFlat(b, []flatField{{name: "node", str: &p.Node}, {name: "cell", str: &p.Cell}, {name: "value", str: &p.Value}}) {
			return true
		}
		*p = SetCell{}
	}
	return false
}

// ---- encoding ----

// appendFlat appends a flat object of string fields in canonical form
// (names in sorted order; a nil value is null unless omit, then left out).
func appendFlat(b []byte, names []string, vals []*string, omit []bool) []byte {
	b = append(b, '{')
	first := true
	for i, name := range names {
		v := vals[i]
		if v == nil && omit[i] {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		if v == nil {
			b = append(b, "null"...)
			continue
		}
		b = appendString(b, *v)
	}
	return append(b, '}')
}

// encodeFast encodes the flat payloads the reducer makes as inverses in
// canonical form, as Canonical(json.Marshal(payload)); nil: not handled.
func encodeFast(payload any) json.RawMessage {
	switch p := payload.(type) {
	case EditText:
		return appendFlat(make([]byte, 0, 24+len(deref(p.Node))+len(deref(p.Text))), []string{"node", "text"}, []*string{p.Node, p.Text}, []bool{false, false})
	case NodeRef:
		return appendFlat(make([]byte, 0, 12+len(deref(p.Node))), []string{"node"}, []*string{p.Node}, []bool{false})
	case MoveNode:
		return appendFlat(make([]byte, 0, 64), []string{"after", "node", "parent", "rank"},
			[]*string{p.After.ID, p.Node, p.Parent.ID, p.Rank}, []bool{false, false, false, true})
	}
	return nil
}

package kbcore

import (
	"encoding/json"
	"reflect"

	"github.com/subspace/kbkit/internal/jsonscan"
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

// decodeFlat fills fields from a flat JSON object, or reports false
// (then nothing it wrote counts: the caller decodes strictly into a fresh
// value).
func decodeFlat(b []byte, fields []flatField) bool {
	var keys [8]string
	if len(fields) > len(keys) {
		return false
	}
	for n, f := range fields {
		keys[n] = f.name
	}
	s := jsonscan.Scanner{B: b}
	ok := s.Object(keys[:len(fields)], func(k int) bool {
		f := fields[k]
		if s.Null() {
			*f.str = nil
		} else {
			v, ok := s.Plain()
			if !ok {
				return false
			}
			str := string(v)
			*f.str = &str
		}
		if f.set != nil {
			*f.set = true
		}
		return true
	})
	return ok && s.End()
}

// decodeFast decodes the flat payloads; false: not handled, and v is
// left the zero value it was (decode it strictly).
func decodeFast(b []byte, v any) bool {
	fields := flatFields(v)
	if fields == nil {
		return false
	}
	if decodeFlat(b, fields) {
		return true
	}
	reflect.ValueOf(v).Elem().SetZero()
	return false
}

// flatFields are the keys of the flat payloads (every field a string or
// null) as pointers into v; nil: v is not a pointer to one.
func flatFields(v any) []flatField {
	switch p := v.(type) {
	case *EditText:
		return []flatField{{name: "node", str: &p.Node}, {name: "text", str: &p.Text}}
	case *NodeRef:
		return []flatField{{name: "node", str: &p.Node}}
	case *CreateAfter:
		return []flatField{{name: "after", str: &p.After}, {name: "parent", str: &p.Parent},
			{name: "node", str: &p.Node}, {name: "text", str: &p.Text}, {name: "kind", str: &p.Kind}, {name: "rank", str: &p.Rank}}
	case *MoveNode:
		return []flatField{{name: "node", str: &p.Node}, {name: "parent", str: &p.Parent.ID, set: &p.Parent.Set},
			{name: "after", str: &p.After.ID, set: &p.After.Set}, {name: "rank", str: &p.Rank}}
	case *SetCell:
		return []flatField{{name: "node", str: &p.Node}, {name: "cell", str: &p.Cell}, {name: "value", str: &p.Value}}
	case *MergePage:
		return []flatField{{name: "into", str: &p.Into}}
	}
	return nil
}

// FlatPayload is a flat payload (every field a string or null) being
// filled one field at a time by a parser that reads its bytes once (the
// server's one-pass envelope parser); Value is then what decoding the
// bytes gives, for Parsed.Value.
type FlatPayload struct {
	value  any
	fields []flatField
}

// NewFlatPayload starts the payload of a command type; false when the
// type is unknown or its payload is not flat.
func NewFlatPayload(typ string) (*FlatPayload, bool) {
	v, ok := NewPayload(typ)
	if !ok {
		return nil, false
	}
	fields := flatFields(v)
	if fields == nil {
		return nil, false
	}
	return &FlatPayload{value: v, fields: fields}, true
}

// Set gives the field of that JSON name a string, or null (nil); false
// when the payload has no such field.
func (f *FlatPayload) Set(name string, v *string) bool {
	for _, fl := range f.fields {
		if fl.name == name {
			*fl.str = v
			if fl.set != nil {
				*fl.set = true
			}
			return true
		}
	}
	return false
}

// Value is the payload: a pointer to its type's payload struct.
func (f *FlatPayload) Value() any { return f.value }

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

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
// same result, same errors. TestRapidFastDecodeIsStrict
// (fastjson_internal_test.go) checks fast == strict on random inputs.

// flatType is a flat payload: every field a string or null. keys are its
// JSON names; set gives field k a string, or null (s nil), and records
// that it was present where the payload tells (MoveNode's parent and
// after).
type flatType struct {
	keys []string
	set  func(v any, k int, s *string)
}

var (
	flatEditText = flatType{[]string{"node", "text"}, func(v any, k int, s *string) {
		p := v.(*EditText)
		if k == 0 {
			p.Node = s
		} else {
			p.Text = s
		}
	}}
	flatNodeRef     = flatType{[]string{"node"}, func(v any, _ int, s *string) { v.(*NodeRef).Node = s }}
	flatMergePage   = flatType{[]string{"into"}, func(v any, _ int, s *string) { v.(*MergePage).Into = s }}
	flatCreateAfter = flatType{[]string{"after", "parent", "node", "text", "kind", "rank"}, func(v any, k int, s *string) {
		p := v.(*CreateAfter)
		switch k {
		case 0:
			p.After = s
		case 1:
			p.Parent = s
		case 2:
			p.Node = s
		case 3:
			p.Text = s
		case 4:
			p.Kind = s
		default:
			p.Rank = s
		}
	}}
	flatMoveNode = flatType{[]string{"node", "parent", "after", "rank"}, func(v any, k int, s *string) {
		p := v.(*MoveNode)
		switch k {
		case 0:
			p.Node = s
		case 1:
			p.Parent = NullableID{Set: true, ID: s}
		case 2:
			p.After = NullableID{Set: true, ID: s}
		default:
			p.Rank = s
		}
	}}
	flatSetCell = flatType{[]string{"node", "cell", "value"}, func(v any, k int, s *string) {
		p := v.(*SetCell)
		switch k {
		case 0:
			p.Node = s
		case 1:
			p.Cell = s
		default:
			p.Value = s
		}
	}}
)

// flatOf is the flat payload v points to; nil when v is not a pointer to
// one.
func flatOf(v any) *flatType {
	switch v.(type) {
	case *EditText:
		return &flatEditText
	case *NodeRef:
		return &flatNodeRef
	case *MergePage:
		return &flatMergePage
	case *CreateAfter:
		return &flatCreateAfter
	case *MoveNode:
		return &flatMoveNode
	case *SetCell:
		return &flatSetCell
	}
	return nil
}

// decodeFast decodes the flat payloads: a flat object of distinct known
// keys, each a plain string or null; false: not handled, and v is left
// the zero value it was (decode it strictly).
func decodeFast(b []byte, v any) bool {
	ft := flatOf(v)
	if ft == nil {
		return false
	}
	s := jsonscan.Scanner{B: b}
	ok := s.Object(ft.keys, func(k int) bool {
		if s.Null() {
			ft.set(v, k, nil)
			return true
		}
		raw, ok := s.Plain()
		if !ok {
			return false
		}
		str := string(raw)
		ft.set(v, k, &str)
		return true
	}) && s.End()
	if !ok {
		reflect.ValueOf(v).Elem().SetZero()
	}
	return ok
}

// NewFlat is a fresh payload of a command type whose payload is flat
// (every field a string or null), for a parser that reads the bytes once
// to fill with SetFlat and hand on in Parsed.Value; false for the other
// types.
func NewFlat(typ string) (any, bool) {
	v, ok := NewPayload(typ)
	if !ok || flatOf(v) == nil {
		return nil, false
	}
	return v, true
}

// SetFlat gives the field of that JSON name of a NewFlat payload a
// string, or null (s nil); false when it has no such field.
func SetFlat(v any, name string, s *string) bool {
	ft := flatOf(v)
	if ft == nil {
		return false
	}
	for k, key := range ft.keys {
		if key == name {
			ft.set(v, k, s)
			return true
		}
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

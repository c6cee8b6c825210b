package schema

import (
	"fmt"
	"unicode/utf8"

	"github.com/subspace/kbkit/internal/jsonscan"
	"github.com/subspace/kbkit/kbcore"
)

// ParseEnvelope validates a wire command envelope against
// envelope.schema.json and decodes it. The command types that carry the
// keystrokes and structure edits (create-after, edit-text, move-node,
// indent, outdent, delete, set-cell, merge-page) are checked and decoded,
// payload included, in one pass over the bytes, without building a generic
// JSON value; any other envelope, and every envelope the one-pass parser
// does not accept, goes through the JSON Schema validator, which stays the
// normative contract (its error is returned). A test proves that the
// one-pass parser accepts exactly what the schema accepts for those types,
// on every case file and on fuzzed input.
//
// The envelope's Parsed says what the parse learnt of the payload: its
// decoded value, and whether its bytes are canonical JSON as they stand
// (spec/README.md section 1), so that neither the reducer nor the log
// reads them again. Canonical false says only "not known".
func ParseEnvelope(b []byte) (kbcore.Envelope, error) {
	if env, ok := fastEnvelope(b); ok {
		return env, nil
	}
	if err := ValidateEnvelope(b); err != nil {
		return kbcore.Envelope{}, err
	}
	var dec kbcore.Envelope
	if err := kbcore.DecodeStrict(b, &dec); err != nil {
		// Unreachable for a valid envelope; reported as a schema problem
		// rather than a panic.
		return kbcore.Envelope{}, invalid(fmt.Sprintf("envelope: %v", err))
	}
	if v, ok := kbcore.NewPayload(dec.Type); ok && kbcore.DecodeStrict(dec.Payload, v) == nil {
		dec.Parsed.Value = v
	}
	return dec, nil
}

// ---- the one-pass parser ----

// field is what a payload key must hold.
type field uint8

const (
	fString          field = iota + 1 // any string
	fNodeID                           // common nodeId
	fNullableNodeID                   // common nullableNodeId
	fNodeRef                          // common nodeRef: any string
	fNullableNodeRef                  // common nullableNodeRef: any string or null
	fRankHint                         // a string or null
	fKind                             // "text", "code", "table" or null
	fCellName                         // common cellName
	fUUID                             // common uuid
)

type payloadShape struct {
	fields   map[string]field
	required []string
}

// fastShapes mirrors payload/<type>.schema.json for the types the one-pass
// parser decides; TestFastEnvelopeAgreesWithSchema keeps them in step.
var fastShapes = map[string]payloadShape{
	"create-after": {fields: map[string]field{"after": fNullableNodeRef, "parent": fNullableNodeRef, "node": fNullableNodeID,
		"text": fString, "kind": fKind, "rank": fRankHint}, required: []string{"text"}},
	"edit-text": {fields: map[string]field{"node": fNodeRef, "text": fString}, required: []string{"node", "text"}},
	"move-node": {fields: map[string]field{"node": fNodeRef, "parent": fNullableNodeRef, "after": fNullableNodeRef, "rank": fRankHint},
		required: []string{"node", "parent", "after"}},
	"indent":     {fields: map[string]field{"node": fNodeRef}, required: []string{"node"}},
	"outdent":    {fields: map[string]field{"node": fNodeRef}, required: []string{"node"}},
	"delete":     {fields: map[string]field{"node": fNodeRef}, required: []string{"node"}},
	"set-cell":   {fields: map[string]field{"node": fNodeRef, "cell": fCellName, "value": fString}, required: []string{"node", "cell", "value"}},
	"merge-page": {fields: map[string]field{"into": fUUID}, required: []string{"into"}},
}

// scanner walks JSON bytes; every method returns false when the input is
// not what the one-pass parser accepts (which may still be valid JSON:
// the caller then asks the schema validator).
type scanner struct{ jsonscan.Scanner }

// key reads an object key without escapes and the colon after it.
func (s *scanner) key() (string, bool) {
	raw, flags, ok := s.Str()
	if !ok || flags&jsonscan.Escaped != 0 || !s.Eat(':') {
		return "", false
	}
	return string(raw), true
}

// fastEnvelope is the one-pass parser: ok means b is a valid envelope of
// one of the fastShapes types and env is its decoding, with Parsed.
func fastEnvelope(b []byte) (env kbcore.Envelope, ok bool) {
	env, canonical, fp, ok := fastEnvelopeParts(b)
	if !ok {
		return kbcore.Envelope{}, false
	}
	env.Parsed = kbcore.Parsed{Value: fp, Canonical: canonical}
	return env, true
}

// fastEnvelopeParts is fastEnvelope: the envelope, whether its payload is
// canonical, and the payload decoded (nil: not decoded).
func fastEnvelopeParts(b []byte) (env kbcore.Envelope, canonical bool, fp any, ok bool) {
	s := &scanner{jsonscan.Scanner{B: b}}
	if !s.Eat('{') {
		return env, false, nil, false
	}
	var seen uint8 // bits: id, device_id, page_id, type, payload
	var payload []byte
	payloadChecked := false
	if s.Eat('}') {
		return env, false, nil, false
	}
	for {
		k, ok := s.key()
		if !ok {
			return env, false, nil, false
		}
		var bit uint8
		switch k {
		case "id":
			bit = 1
		case "device_id":
			bit = 2
		case "page_id":
			bit = 4
		case "type":
			bit = 8
		case "payload":
			bit = 16
		default:
			return env, false, nil, false
		}
		if seen&bit != 0 {
			return env, false, nil, false // a duplicate key: left to the schema
		}
		seen |= bit
		switch bit {
		case 1, 2, 4:
			raw, flags, ok := s.Str()
			if !ok || flags&jsonscan.Escaped != 0 || !isUUID(raw) {
				return env, false, nil, false
			}
			v := string(raw)
			switch bit {
			case 1:
				env.ID = v
			case 2:
				env.DeviceID = v
			default:
				env.PageID = v
			}
		case 8:
			raw, flags, ok := s.Str()
			if !ok || flags&jsonscan.Escaped != 0 {
				return env, false, nil, false
			}
			if _, known := fastShapes[string(raw)]; !known {
				return env, false, nil, false
			}
			env.Type = string(raw)
		case 16:
			s.WS()
			start := s.I
			if env.Type != "" {
				fp, _ = kbcore.NewFlat(env.Type)
				if canonical, ok = s.payload(fastShapes[env.Type], &fp); !ok {
					return env, false, nil, false
				}
				payloadChecked = true
			} else if s.Peek() != '{' {
				return env, false, nil, false
			} else if _, ok := s.Skip(); !ok {
				return env, false, nil, false
			}
			payload = b[start:s.I]
		}
		if s.Eat(',') {
			continue
		}
		if !s.Eat('}') {
			return env, false, nil, false
		}
		break
	}
	if !s.End() || seen != 31 {
		return env, false, nil, false
	}
	if !payloadChecked {
		ps := &scanner{jsonscan.Scanner{B: payload}}
		fp, _ = kbcore.NewFlat(env.Type)
		if canonical, ok = ps.payload(fastShapes[env.Type], &fp); !ok || ps.I != len(payload) {
			return env, false, nil, false
		}
	}
	env.Payload = append([]byte(nil), payload...)
	return env, canonical, fp, true
}

// payload reads a payload object of the given shape, and finds in the
// same pass whether it is written in canonical JSON as it stands: no white
// space, keys in UTF-16 order, every string as RFC 8785 writes it (here:
// without escapes, valid UTF-8; a string with escapes is "not known").
//
// fp, when not nil, is filled with the values read; it is set to nil
// when a value cannot be given as read (escapes, invalid UTF-8: then the
// payload is "not decoded" and the reducer decodes it as before).
func (s *scanner) payload(sh payloadShape, fp *any) (canonical, ok bool) {
	canonical = true
	tight := func() { // the next token follows without white space
		if s.I < len(s.B) && jsonscan.IsSpace(s.B[s.I]) {
			canonical = false
		}
	}
	if !s.Eat('{') {
		return false, false
	}
	var seen [8]string
	n := 0
	tight()
	if !s.Eat('}') {
		for {
			tight()
			raw, flags, ok := s.Str()
			if !ok || flags&jsonscan.Escaped != 0 {
				return false, false
			}
			tight()
			if !s.Eat(':') {
				return false, false
			}
			k := string(raw)
			f, known := sh.fields[k]
			if !known || n == len(seen) {
				return false, false
			}
			for _, x := range seen[:n] {
				if x == k {
					return false, false
				}
			}
			if n > 0 && !jsonscan.UTF16Less(seen[n-1], k) {
				canonical = false
			}
			seen[n] = k
			n++
			tight()
			raw, null, esc, vcanon, ok := s.value(f)
			if !ok {
				return false, false
			}
			switch {
			case *fp == nil:
			case esc || !vcanon:
				*fp = nil // escapes or invalid UTF-8: the reducer decodes it
			case null:
				kbcore.SetFlat(*fp, k, nil)
			default:
				v := string(raw)
				if !kbcore.SetFlat(*fp, k, &v) {
					*fp = nil // a key the schema allows and the struct lacks: left to the reducer
				}
			}
			canonical = canonical && vcanon
			tight()
			if s.Eat(',') {
				continue
			}
			if !s.Eat('}') {
				return false, false
			}
			break
		}
	}
	for _, r := range sh.required {
		found := false
		for _, x := range seen[:n] {
			found = found || x == r
		}
		if !found {
			return false, false
		}
	}
	return canonical, true
}

// value reads a payload value of the kind f: the string's raw bytes
// (escaped: with its escapes) or null, and whether it is written as
// canonical JSON writes it.
func (s *scanner) value(f field) (raw []byte, null, escaped, canonical, ok bool) {
	switch f {
	case fNullableNodeID, fNullableNodeRef, fRankHint, fKind:
		if s.Null() {
			return nil, true, false, true, true
		}
	}
	raw, flags, ok := s.Str()
	if !ok {
		return nil, false, false, false, false
	}
	esc := flags&jsonscan.Escaped != 0
	canonical = !esc && utf8.Valid(raw)
	switch f {
	case fString, fRankHint, fNodeRef, fNullableNodeRef:
		ok = true // any string (escapes checked by Str)
	case fNodeID, fNullableNodeID:
		ok = !esc && isNodeID(raw)
	case fKind:
		ok = !esc && (string(raw) == "text" || string(raw) == "code" || string(raw) == "table")
	case fCellName:
		ok = !esc && isCellName(raw)
	case fUUID:
		ok = !esc && isUUID(raw)
	default:
		ok = false
	}
	return raw, false, esc, canonical, ok
}

// isUUID is common.schema.json's uuid pattern.
func isUUID(b []byte) bool {
	if len(b) != 36 {
		return false
	}
	for i, c := range b {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// isNodeID is common.schema.json's nodeId pattern.
func isNodeID(b []byte) bool {
	if len(b) < 1 || len(b) > 64 {
		return false
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isCellName is common.schema.json's cellName pattern.
func isCellName(b []byte) bool {
	i := 0
	for i < len(b) && i < 3 && 'A' <= b[i] && b[i] <= 'Z' {
		i++
	}
	if i == 0 || i >= len(b) || b[i] < '1' || b[i] > '9' {
		return false
	}
	digits := len(b) - i
	if digits > 6 {
		return false
	}
	for _, c := range b[i:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

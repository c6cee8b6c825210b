package schema

import (
	"fmt"

	"github.com/subspace/kbkit/kbcore"
)

// ParseEnvelope validates a wire command envelope against
// envelope.schema.json and decodes it. The command types that carry the
// keystrokes and structure edits (create-after, edit-text, move-node,
// indent, outdent, delete, set-cell, merge-page) are checked and decoded in
// one pass over the bytes, without building a generic JSON value; any
// other envelope, and every envelope the one-pass parser does not accept,
// goes through the JSON Schema validator, which stays the normative
// contract (its error is returned). A test proves that the one-pass parser
// accepts exactly what the schema accepts for those types, on every case
// file and on fuzzed input.
func ParseEnvelope(b []byte) (kbcore.Envelope, error) {
	if env, ok := fastEnvelope(b); ok {
		return env, nil
	}
	if err := ValidateEnvelope(b); err != nil {
		return kbcore.Envelope{}, err
	}
	var env kbcore.Envelope
	if err := kbcore.DecodeStrict(b, &env); err != nil {
		// Unreachable for a valid envelope; reported as a schema problem
		// rather than a panic.
		return kbcore.Envelope{}, invalid(fmt.Sprintf("envelope: %v", err))
	}
	return env, nil
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
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// str reads a JSON string and returns its raw content and whether it has
// escapes. It checks the escapes and rejects control characters.
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	if !s.eat('"') {
		return nil, false, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if s.i+5 > len(s.b) {
					return nil, false, false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				s.i += 5
			default:
				return nil, false, false
			}
		default:
			s.i++
		}
	}
	return nil, false, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// null reads the literal null.
func (s *scanner) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// key reads an object key without escapes and the colon after it.
func (s *scanner) key() (string, bool) {
	raw, esc, ok := s.str()
	if !ok || esc || !s.eat(':') {
		return "", false
	}
	return string(raw), true
}

// fastEnvelope is the one-pass parser: ok means b is a valid envelope of
// one of the fastShapes types and env is its decoding.
func fastEnvelope(b []byte) (env kbcore.Envelope, ok bool) {
	s := &scanner{b: b}
	if !s.eat('{') {
		return env, false
	}
	var seen uint8 // bits: id, device_id, page_id, type, payload
	var payload []byte
	payloadChecked := false
	if s.eat('}') {
		return env, false
	}
	for {
		k, ok := s.key()
		if !ok {
			return env, false
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
			return env, false
		}
		if seen&bit != 0 {
			return env, false // a duplicate key: left to the schema
		}
		seen |= bit
		switch bit {
		case 1, 2, 4:
			raw, esc, ok := s.str()
			if !ok || esc || !isUUID(raw) {
				return env, false
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
			raw, esc, ok := s.str()
			if !ok || esc {
				return env, false
			}
			if _, known := fastShapes[string(raw)]; !known {
				return env, false
			}
			env.Type = string(raw)
		case 16:
			s.ws()
			start := s.i
			if env.Type != "" {
				if !s.payload(fastShapes[env.Type]) {
					return env, false
				}
				payloadChecked = true
			} else if !s.skipObject() {
				return env, false
			}
			payload = b[start:s.i]
		}
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return env, false
		}
		break
	}
	s.ws()
	if s.i != len(b) || seen != 31 {
		return env, false
	}
	if !payloadChecked {
		ps := &scanner{b: payload}
		if !ps.payload(fastShapes[env.Type]) || ps.i != len(payload) {
			return env, false
		}
	}
	env.Payload = append([]byte(nil), payload...)
	return env, true
}

// payload reads a payload object of the given shape.
func (s *scanner) payload(sh payloadShape) bool {
	if !s.eat('{') {
		return false
	}
	var seen [8]string
	n := 0
	if !s.eat('}') {
		for {
			k, ok := s.key()
			if !ok {
				return false
			}
			f, known := sh.fields[k]
			if !known || n == len(seen) {
				return false
			}
			for _, x := range seen[:n] {
				if x == k {
					return false
				}
			}
			seen[n] = k
			n++
			if !s.value(f) {
				return false
			}
			if s.eat(',') {
				continue
			}
			if !s.eat('}') {
				return false
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
			return false
		}
	}
	return true
}

func (s *scanner) value(f field) bool {
	switch f {
	case fNullableNodeID, fNullableNodeRef, fRankHint, fKind:
		if s.null() {
			return true
		}
	}
	raw, esc, ok := s.str()
	if !ok {
		return false
	}
	switch f {
	case fString, fRankHint, fNodeRef, fNullableNodeRef:
		return true // any string (escapes checked by str)
	case fNodeID, fNullableNodeID:
		return !esc && isNodeID(raw)
	case fKind:
		return !esc && (string(raw) == "text" || string(raw) == "code" || string(raw) == "table")
	case fCellName:
		return !esc && isCellName(raw)
	case fUUID:
		return !esc && isUUID(raw)
	}
	return false
}

// skipObject skips an object whose values are strings, null, or objects
// and arrays of them (a payload read before its type); anything else is
// left to the schema.
func (s *scanner) skipObject() bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	for {
		if _, ok := s.key(); !ok {
			return false
		}
		if !s.skipValue(0) {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

func (s *scanner) skipValue(depth int) bool {
	if depth > 8 {
		return false
	}
	switch s.peek() {
	case '"':
		_, _, ok := s.str()
		return ok
	case 'n':
		return s.null()
	case '{':
		s.i++
		if s.eat('}') {
			return true
		}
		for {
			if _, ok := s.key(); !ok || !s.skipValue(depth+1) {
				return false
			}
			if s.eat(',') {
				continue
			}
			return s.eat('}')
		}
	case '[':
		s.i++
		if s.eat(']') {
			return true
		}
		for {
			if !s.skipValue(depth + 1) {
				return false
			}
			if s.eat(',') {
				continue
			}
			return s.eat(']')
		}
	}
	return false
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

package client

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/subspace/kbkit/kbcore"
)

// The fast decoder of kb.onPage events. Nearly every message a
// subscription receives is a tracked event in the shape the spec shows
// (spec/PROTOCOL.md 4.4):
//
//	{"id":1,"result":{"type":"data","id":"12","data":{"cmd":{"id":"…","payload":{…},"type":"edit-text"},"seq":12}}}
//
// decodeEvent reads exactly that shape (keys in any order, white space
// between tokens, each key once and spelt as the spec does, plain
// strings, integer seq, an object payload, which is checked to be valid
// JSON) without reflection, allocating the command id and the tracked id
// (the payload is a slice of the message, which its page's ring keeps). On anything else it reports false, and
// the message goes through the reflective decoder (decodeMessage), which
// decides as before what it means or why it is malformed: the fast path
// changes what is decoded into nothing (wire_test.go checks fast ==
// reflective on random messages).

// scanner is a position in a message.
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

// byte consumes c (after white space).
func (s *scanner) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plain reads a string without escapes or control characters whose bytes
// are valid UTF-8 (encoding/json would rewrite anything else).
func (s *scanner) plain() ([]byte, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	ascii := true
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.b[s.i+1 : j]
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			s.i = j + 1
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// int reads an integer as encoding/json reads one into an int64: no
// fraction or exponent (those are errors there; here they are declined).
func (s *scanner) int() (int64, bool) {
	s.ws()
	j, neg := s.i, false
	if j < len(s.b) && s.b[j] == '-' {
		neg = true
		j++
	}
	start := j
	var n int64
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		n = n*10 + int64(s.b[j]-'0')
		j++
	}
	digits := j - start
	if digits == 0 || digits > 18 || (digits > 1 && s.b[start] == '0') {
		return 0, false
	}
	if j < len(s.b) {
		switch s.b[j] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	s.i = j
	if neg {
		n = -n
	}
	return n, true
}

// value skips one valid JSON value (depth-limited), returning its bytes.
func (s *scanner) value(depth int) ([]byte, bool) {
	s.ws()
	if s.i >= len(s.b) || depth > 64 {
		return nil, false
	}
	start := s.i
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		if s.byte('}') {
			return s.b[start:s.i], true
		}
		for {
			if !s.str() || !s.byte(':') {
				return nil, false
			}
			if _, ok := s.value(depth + 1); !ok {
				return nil, false
			}
			if s.byte(',') {
				continue
			}
			if s.byte('}') {
				return s.b[start:s.i], true
			}
			return nil, false
		}
	case c == '[':
		s.i++
		if s.byte(']') {
			return s.b[start:s.i], true
		}
		for {
			if _, ok := s.value(depth + 1); !ok {
				return nil, false
			}
			if s.byte(',') {
				continue
			}
			if s.byte(']') {
				return s.b[start:s.i], true
			}
			return nil, false
		}
	case c == '"':
		if !s.str() {
			return nil, false
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if !s.number() {
			return nil, false
		}
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return s.b[start:s.i], true
			}
		}
		return nil, false
	}
	return s.b[start:s.i], true
}

// str skips a valid JSON string (escapes checked; bytes are kept as they
// are, as a json.RawMessage keeps them).
func (s *scanner) str() bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(s.b) {
				return false
			}
			switch s.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.b) {
					return false
				}
				for k := 1; k <= 4; k++ {
					if !isHex(s.b[j+k]) {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number skips a JSON number.
func (s *scanner) number() bool {
	b, j := s.b, s.i
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
	s.i = j
	return true
}

// object reads a flat object of known keys, each once, calling field for
// each; false on any other key, a repeat, or a field that fails.
func (s *scanner) object(keys []string, field func(k int) bool) bool {
	if !s.byte('{') {
		return false
	}
	var seen uint32
	if s.byte('}') {
		return true
	}
	for {
		key, ok := s.plain()
		if !ok || !s.byte(':') {
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
		if s.byte(',') {
			continue
		}
		return s.byte('}')
	}
}

var (
	keysMessage = []string{"id", "result"}
	keysResult  = []string{"type", "id", "data"}
	keysData    = []string{"seq", "cmd"}
	keysCmd     = []string{"id", "type", "payload"}
)

// commandType is the type string without an allocation for the known
// types.
func commandType(b []byte) string {
	for _, t := range kbcore.Types {
		if t == string(b) {
			return t
		}
	}
	return string(b)
}

// decodeEvent decodes a tracked event message in the spec's shape; false:
// anything else (decodeMessage decides). The payload is a slice of b,
// which the caller must own.
func decodeEvent(b []byte) (Event, bool) {
	s := scanner{b: b}
	var ev Event
	var typ, tracked []byte
	var payload []byte
	var haveResult, haveType, haveTracked, haveData, haveSeq, haveCmd, haveCmdType, havePayload bool
	ok := s.object(keysMessage, func(k int) bool {
		if k == 0 { // the request id: a plain number or string
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == '"' {
				_, ok := s.plain()
				return ok
			}
			_, ok := s.int()
			return ok
		}
		haveResult = true
		return s.object(keysResult, func(k int) bool {
			var ok bool
			switch k {
			case 0:
				typ, ok = s.plain()
				haveType = true
			case 1:
				tracked, ok = s.plain()
				haveTracked = true
			default:
				haveData = true
				ok = s.object(keysData, func(k int) bool {
					if k == 0 {
						var ok bool
						ev.Seq, ok = s.int()
						haveSeq = true
						return ok
					}
					haveCmd = true
					return s.object(keysCmd, func(k int) bool {
						switch k {
						case 0:
							id, ok := s.plain()
							ev.Cmd.ID = string(id)
							return ok
						case 1:
							t, ok := s.plain()
							ev.Cmd.Type = commandType(t)
							haveCmdType = true
							return ok
						}
						s.ws()
						if s.i >= len(s.b) || s.b[s.i] != '{' {
							return false // null or another kind: the reflective decoder says what it means
						}
						var ok bool
						payload, ok = s.value(0)
						havePayload = true
						return ok
					})
				})
			}
			return ok
		})
	})
	s.ws()
	if !ok || s.i != len(s.b) || !haveResult || !haveType || string(typ) != "data" || !haveTracked ||
		!haveData || !haveSeq || !haveCmd || !haveCmdType || !havePayload {
		return Event{}, false
	}
	ev.TrackedID = string(tracked)
	ev.Cmd.Payload = json.RawMessage(payload[:len(payload):len(payload)])
	return ev, true
}

// plainAck reads kb.command's usual answer, {"result":{"data":{"seq":N}}}
// exactly; false: anything else (answer decides).
func plainAck(b []byte) (int64, bool) {
	const head, tail = `{"result":{"data":{"seq":`, `}}}`
	b = bytes.TrimRight(b, " \t\r\n")
	if !bytes.HasPrefix(b, []byte(head)) || !bytes.HasSuffix(b, []byte(tail)) || len(b) <= len(head)+len(tail) {
		return 0, false
	}
	s := scanner{b: b[len(head) : len(b)-len(tail)]}
	n, ok := s.int()
	if !ok || s.i != len(s.b) || n <= 0 {
		return 0, false
	}
	return n, true
}

// encodeEnvelope is json.Marshal(env), by hand when every string is one
// json.Marshal writes as itself and the payload is compact JSON without
// a character json.Marshal escapes (it compacts and escapes a payload's
// HTML characters); the same bytes either way (wire_test.go checks).
func encodeEnvelope(env kbcore.Envelope) []byte {
	if !plainJSON(env.ID) || !plainJSON(env.DeviceID) || !plainJSON(env.PageID) || !plainJSON(env.Type) || !compactPlain(env.Payload) {
		b, _ := json.Marshal(env)
		return b
	}
	b := make([]byte, 0, 64+len(env.ID)+len(env.DeviceID)+len(env.PageID)+len(env.Type)+len(env.Payload))
	b = append(b, `{"id":"`...)
	b = append(b, env.ID...)
	b = append(b, `","device_id":"`...)
	b = append(b, env.DeviceID...)
	b = append(b, `","page_id":"`...)
	b = append(b, env.PageID...)
	b = append(b, `","type":"`...)
	b = append(b, env.Type...)
	b = append(b, `","payload":`...)
	b = append(b, env.Payload...)
	return append(b, '}')
}

// plainJSON reports whether json.Marshal writes s as itself in quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// compactPlain reports whether raw is one valid JSON value, without white
// space between tokens and without bytes json.Marshal would rewrite
// (non-ASCII, <, >, &): what json.Marshal copies as it is.
func compactPlain(raw []byte) bool {
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
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	s := scanner{b: raw}
	_, ok := s.value(0)
	return ok && s.i == len(raw)
}

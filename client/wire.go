package client

import (
	"bytes"
	"encoding/json"

	"github.com/subspace/kbkit/internal/jsonscan"
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
	s := jsonscan.Scanner{B: b}
	var ev Event
	var typ, tracked []byte
	var payload []byte
	var haveResult, haveType, haveTracked, haveData, haveSeq, haveCmd, haveCmdType, havePayload bool
	ok := s.Object(keysMessage, func(k int) bool {
		if k == 0 { // the request id: a plain number or string
			if s.Peek() == '"' {
				_, ok := s.Plain()
				return ok
			}
			_, ok := s.Int()
			return ok
		}
		haveResult = true
		return s.Object(keysResult, func(k int) bool {
			var ok bool
			switch k {
			case 0:
				typ, ok = s.Plain()
				haveType = true
			case 1:
				tracked, ok = s.Plain()
				haveTracked = true
			default:
				haveData = true
				ok = s.Object(keysData, func(k int) bool {
					if k == 0 {
						var ok bool
						ev.Seq, ok = s.Int()
						haveSeq = true
						return ok
					}
					haveCmd = true
					return s.Object(keysCmd, func(k int) bool {
						switch k {
						case 0:
							id, ok := s.Plain()
							ev.Cmd.ID = string(id)
							return ok
						case 1:
							t, ok := s.Plain()
							ev.Cmd.Type = commandType(t)
							haveCmdType = true
							return ok
						}
						if s.Peek() != '{' {
							return false // null or another kind: the reflective decoder says what it means
						}
						var ok bool
						payload, ok = s.Skip()
						havePayload = true
						return ok
					})
				})
			}
			return ok
		})
	})
	if !ok || !s.End() || !haveResult || !haveType || string(typ) != "data" || !haveTracked ||
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
	const head, tail = `{"result":{"data":`, `}}`
	b = bytes.TrimRight(b, " \t\r\n")
	if !bytes.HasPrefix(b, []byte(head)) || !bytes.HasSuffix(b, []byte(tail)) || len(b) <= len(head)+len(tail) {
		return 0, false
	}
	return plainSeq(b[len(head) : len(b)-len(tail)])
}

// plainSeq reads kb.command's data written exactly as {"seq":N}, N > 0.
func plainSeq(b []byte) (int64, bool) {
	const head, tail = `{"seq":`, `}`
	if !bytes.HasPrefix(b, []byte(head)) || !bytes.HasSuffix(b, []byte(tail)) || len(b) <= len(head)+len(tail) {
		return 0, false
	}
	s := jsonscan.Scanner{B: b[len(head) : len(b)-len(tail)]}
	n, ok := s.Int()
	if !ok || s.I != len(s.B) || n <= 0 {
		return 0, false
	}
	return n, true
}

// encodeEnvelope is json.Marshal(env), by hand when every string is one
// json.Marshal writes as itself and the payload is compact JSON without
// a character json.Marshal escapes (it compacts and escapes a payload's
// HTML characters); the same bytes either way (wire_test.go checks).
func encodeEnvelope(env kbcore.Envelope) []byte {
	if !jsonscan.PlainJSON(env.ID) || !jsonscan.PlainJSON(env.DeviceID) || !jsonscan.PlainJSON(env.PageID) || !jsonscan.PlainJSON(env.Type) ||
		!jsonscan.CompactPlain(env.Payload) {
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

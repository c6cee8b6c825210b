package broken

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/subspace/kbkit/sim/internal/wsrelay"
)

// More broken variants for the proxy of mutate.go: servers that break the
// guarantees the checks of checks_wire.go and quiesce.go watch (echoes
// owed, resumption, dedup answers, refetch outcomes, the encoding of
// kb.page), and servers that stop echoing or answering, which the run
// must survive in bounded time.

// mutNoOwnEcho: a server that never echoes a device's own commands to
// that device's sockets (its other devices get them). A window then waits
// for an echo it is owed.
func mutNoOwnEcho() Mutation {
	n := new(atomic.Int64)
	var mu sync.Mutex
	poster := map[string]string{} // command id -> Authorization of its POST
	return Mutation{
		fired: n,
		command: func(auth string, body []byte) []byte {
			if id, _ := envelopeID(body); id != "" {
				mu.Lock()
				if _, ok := poster[id]; !ok {
					poster[id] = auth
				}
				mu.Unlock()
			}
			return body
		},
		stream: func(auth string) streamMutator {
			return filterEvents(func(ev wsrelay.Event) bool {
				mu.Lock()
				own := poster[ev.CmdID] == auth
				mu.Unlock()
				if own {
					n.Add(1)
				}
				return !own
			})
		},
	}
}

// filterEvents is a stream mutator that passes the events keep accepts.
type filterEvents func(ev wsrelay.Event) bool

func (f filterEvents) event(ev wsrelay.Event) []wsrelay.Event {
	if f(ev) {
		return []wsrelay.Event{ev}
	}
	return nil
}

func (filterEvents) flush() []wsrelay.Event { return nil }

// mutRenumber: a server that loses every event of seq 3 mod 7 and
// renumbers the rest of the stream so that no gap shows. A window's own
// echoes come at other seqs than its commands were acknowledged with, and
// the stream never reaches the head kb.page and the answers report.
func mutRenumber() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, stream: func(string) streamMutator { return &renumber{fired: n} }}
}

type renumber struct {
	shift int64
	fired *atomic.Int64
}

func (r *renumber) event(ev wsrelay.Event) []wsrelay.Event {
	if ev.Seq%7 == 3 {
		r.fired.Add(1)
		r.shift++
		return nil
	}
	ev.Seq -= r.shift
	return []wsrelay.Event{ev}
}

func (r *renumber) flush() []wsrelay.Event { return nil }

// mutAckSeq: a server whose kb.command answers name another seq than the
// one it logged the command at: a command logged at a seq of 0 mod 5
// (from 10 on) is acknowledged two seqs earlier, its retries too. The
// window's own echo then comes at a seq other than its acknowledgement.
func mutAckSeq() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, response: func(proc string, body []byte) []byte {
		if proc != "kb.command" {
			return body
		}
		return rewriteData(body, func(data map[string]json.RawMessage) bool {
			seq, err := strconv.ParseInt(string(data["seq"]), 10, 64)
			if err != nil || seq < 10 || seq%5 != 0 {
				return false
			}
			n.Add(1)
			data["seq"] = json.RawMessage(strconv.FormatInt(seq-2, 10))
			return true
		})
	}}
}

// mutIgnoreLastEventID: a server that ignores a subscription's
// lastEventId and replays the page's log from seq 1 on every resume
// (modelled by taking lastEventId out of the subscription on its way in).
func mutIgnoreLastEventID() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, upstream: func(b []byte) []byte {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return b
		}
		var params map[string]json.RawMessage
		if json.Unmarshal(m["params"], &params) != nil {
			return b
		}
		var input map[string]json.RawMessage
		if json.Unmarshal(params["input"], &input) != nil {
			return b
		}
		if _, ok := input["lastEventId"]; !ok {
			return b
		}
		n.Add(1)
		delete(input, "lastEventId")
		params["input"] = rawJSON(input)
		m["params"] = rawJSON(params)
		return rawJSON(m)
	}}
}

// mutUntracked: a server whose data events are not tracked as tRPC
// resumes them: with wrongID, result.id is the previous seq; without,
// result.id is left out (every other event each).
func mutUntracked(wrongID bool) func() Mutation {
	return func() Mutation {
		n := new(atomic.Int64)
		return Mutation{fired: n, stream: func(string) streamMutator {
			return mapEvents(func(ev wsrelay.Event) wsrelay.Event {
				if ev.Seq%2 == 0 {
					n.Add(1)
					id := ""
					if wrongID {
						id = strconv.FormatInt(ev.Seq-1, 10)
					}
					ev.Tracked = &id
				}
				return ev
			})
		}}
	}
}

// mapEvents is a stream mutator that rewrites each event.
type mapEvents func(ev wsrelay.Event) wsrelay.Event

func (f mapEvents) event(ev wsrelay.Event) []wsrelay.Event { return []wsrelay.Event{f(ev)} }

func (mapEvents) flush() []wsrelay.Event { return nil }

// mutNoDuplicateFlag: a server that deduplicates a retried committed id
// (the original seq) but leaves duplicate: true out of the answer.
func mutNoDuplicateFlag() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, response: func(proc string, body []byte) []byte {
		if proc != "kb.command" {
			return body
		}
		return rewriteData(body, func(data map[string]json.RawMessage) bool {
			if _, ok := data["duplicate"]; !ok {
				return false
			}
			n.Add(1)
			delete(data, "duplicate")
			return true
		})
	}}
}

// mutNonCanonicalPage: a server whose kb.page documents are valid but not
// in canonical JSON: "page" before "nodes", the page's keys and the nodes
// in reverse order.
func mutNonCanonicalPage() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, response: func(proc string, body []byte) []byte {
		if proc != "kb.page" {
			return body
		}
		return rewriteData(body, func(data map[string]json.RawMessage) bool {
			doc, ok := reorderDoc(data["doc"])
			if ok {
				n.Add(1)
				data["doc"] = doc
			}
			return ok
		})
	}}
}

// reorderDoc writes a document {"nodes":[...],"page":{...}} as
// {"page":{...keys reversed...},"nodes":[...reversed...]}.
func reorderDoc(raw json.RawMessage) (json.RawMessage, bool) {
	var d struct {
		Nodes []json.RawMessage          `json:"nodes"`
		Page  map[string]json.RawMessage `json:"page"`
	}
	if json.Unmarshal(raw, &d) != nil || d.Page == nil {
		return raw, false
	}
	var b bytes.Buffer
	b.WriteString(`{"page":{`)
	keys := make([]string, 0, len(d.Page))
	for k := range d.Page {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(d.Page[k])
	}
	b.WriteString(`},"nodes":[`)
	for i := range d.Nodes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(d.Nodes[len(d.Nodes)-1-i])
	}
	b.WriteString(`]}`)
	return b.Bytes(), true
}

// mutLoseCells: a server whose kb.page documents lose the cells of table
// nodes and the outputs of code nodes (its log keeps the set-cell and
// set-outputs commands).
func mutLoseCells() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, response: func(proc string, body []byte) []byte {
		if proc != "kb.page" {
			return body
		}
		return rewriteData(body, func(data map[string]json.RawMessage) bool {
			var doc struct {
				Nodes []map[string]json.RawMessage `json:"nodes"`
				Page  json.RawMessage              `json:"page"`
			}
			if json.Unmarshal(data["doc"], &doc) != nil {
				return false
			}
			lost := false
			for _, node := range doc.Nodes {
				for field, empty := range map[string]string{"cells": "{}", "outputs": "[]"} {
					if v, ok := node[field]; ok && string(v) != empty {
						node[field] = json.RawMessage(empty)
						lost = true
					}
				}
			}
			if lost {
				n.Add(1)
				data["doc"] = rawJSON(doc)
			}
			return lost
		})
	}}
}

// mutDropRejectedOutcomes: a server whose kb.page leaves rejected ids out
// of outcomes (it reports only the committed ones): a client that lost a
// rejection's answer learns nothing from its refetch.
func mutDropRejectedOutcomes() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, response: func(proc string, body []byte) []byte {
		if proc != "kb.page" {
			return body
		}
		return rewriteData(body, func(data map[string]json.RawMessage) bool {
			var outcomes map[string]map[string]json.RawMessage
			if json.Unmarshal(data["outcomes"], &outcomes) != nil {
				return false
			}
			dropped := false
			for id, o := range outcomes {
				if r, ok := o["rejected"]; ok && string(r) != "null" {
					delete(outcomes, id)
					n.Add(1)
					dropped = true
				}
			}
			if dropped {
				data["outcomes"] = rawJSON(outcomes)
			}
			return dropped
		})
	}}
}

// mutNoAnswer: a server that stops answering kb.command after the first
// 20 calls (the commands are still applied; the answers never come).
func mutNoAnswer() Mutation {
	n := new(atomic.Int64)
	var calls atomic.Int64
	return Mutation{fired: n, response: func(proc string, body []byte) []byte {
		if proc != "kb.command" || calls.Add(1) <= 20 {
			return body
		}
		n.Add(1)
		return nil // withheld
	}}
}

// mutRefuseSockets: a server that refuses every WebSocket (503): windows
// can never subscribe and must back off while they retry.
func mutRefuseSockets() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, refuseSockets: true}
}

// rewriteData applies f to the "data" object of a tRPC success answer
// {"result":{"data":{...}}} and returns the answer re-encoded when f
// changed it (the body unchanged otherwise).
func rewriteData(body []byte, f func(data map[string]json.RawMessage) bool) []byte {
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil {
		return body
	}
	var result map[string]json.RawMessage
	if json.Unmarshal(env["result"], &result) != nil {
		return body
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(result["data"], &data) != nil || data == nil {
		return body
	}
	if !f(data) {
		return body
	}
	result["data"] = rawJSON(data)
	env["result"] = rawJSON(result)
	return rawJSON(env)
}

// mutLimitsWithout: a server whose kb.limits lacks field (an independent
// server written before the field was required). Only the wire suite's
// protocol/hostile-limits is about it; every other check goes on.
func mutLimitsWithout(field string) func() Mutation {
	return func() Mutation {
		n := new(atomic.Int64)
		return Mutation{fired: n, answers: "kb.limits", response: func(proc string, body []byte) []byte {
			if proc != "kb.limits" {
				return body
			}
			return rewriteData(body, func(data map[string]json.RawMessage) bool {
				if _, ok := data[field]; !ok {
					return false
				}
				delete(data, field)
				n.Add(1)
				return true
			})
		}}
	}
}

// rawJSON encodes v without escaping <, > and & (what the server wrote
// inside strings stays as it was).
func rawJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

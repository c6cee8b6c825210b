package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/subspace/kbkit/internal/jsonscan"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/wire"
)

// Calls over a subscription's WebSocket (spec/PROTOCOL.md section 5.1): a
// window can send its commands as tRPC mutations on the socket it already
// reads its page's events from, as tRPC's WebSocket link does, instead of
// one HTTP POST each. The subscription is id 1; calls take 2, 3, ... and
// the reader hands each reply to its caller by id.

// ErrSocketEnded is a call's answer when its socket ended before the reply
// came: the command is undecided (IsRetryable), never rejected.
var ErrSocketEnded = errors.New("client: the WebSocket ended before the answer")

// subscriptionID is the id of a subscription's kb.onPage call.
const subscriptionID = 1

// callReply is a call's answer: data, a tRPC error, or err (the socket
// ended, or the reply was malformed).
type callReply struct {
	data json.RawMessage
	terr *wire.ErrorShape
	err  error
}

// call sends a query or mutation on the subscription's socket and waits for
// its reply, ctx's end, or the socket's.
func (s *Subscription) call(ctx context.Context, method, path string, input []byte) (json.RawMessage, *wire.ErrorShape, error) {
	ch := make(chan callReply, 1)
	s.callMu.Lock()
	if s.ended {
		s.callMu.Unlock()
		return nil, nil, ErrSocketEnded
	}
	if s.calls == nil {
		s.calls = map[int64]chan callReply{}
	}
	s.lastCall = max(s.lastCall, subscriptionID) + 1
	id := s.lastCall
	s.calls[id] = ch
	s.callMu.Unlock()
	msg := make([]byte, 0, 64+len(path)+len(input))
	msg = append(msg, `{"id":`...)
	msg = strconv.AppendInt(msg, id, 10)
	msg = append(msg, `,"method":"`...)
	msg = append(msg, method...)
	msg = append(msg, `","params":{"path":"`...)
	msg = append(msg, path...)
	msg = append(msg, `","input":`...)
	msg = append(msg, input...)
	msg = append(msg, `}}`...)
	if err := s.conn.write(ctx, msg); err != nil {
		s.dropCall(id)
		return nil, nil, err
	}
	select {
	case r := <-ch:
		return r.data, r.terr, r.err
	case <-ctx.Done():
		s.dropCall(id)
		return nil, nil, ctx.Err()
	}
}

// open reports whether the socket still reads (calls can be made on it).
func (s *Subscription) open() bool {
	s.callMu.Lock()
	defer s.callMu.Unlock()
	return !s.ended
}

func (s *Subscription) dropCall(id int64) {
	s.callMu.Lock()
	delete(s.calls, id)
	s.callMu.Unlock()
}

// endCalls answers every waiting call ErrSocketEnded; the reader calls it
// as it ends, and no call starts after.
func (s *Subscription) endCalls() {
	s.callMu.Lock()
	defer s.callMu.Unlock()
	s.ended = true
	for id, ch := range s.calls {
		ch <- callReply{err: ErrSocketEnded}
		delete(s.calls, id)
	}
}

// reply hands b to its call when b is a call's reply (an id other than the
// subscription's); false: b is the subscription's.
func (s *Subscription) reply(b []byte) bool {
	id, ok := callID(b)
	if !ok {
		return false
	}
	s.callMu.Lock()
	ch := s.calls[id]
	delete(s.calls, id)
	s.callMu.Unlock()
	if ch != nil { // nil: its caller gave up
		ch <- decodeReply(b)
	}
	return true
}

// plainReply reads a reply written exactly as
// {"id":N,"result":{"type":"data","data":D}} and returns D (a slice of b).
func plainReply(b []byte) (json.RawMessage, bool) {
	const mid, tail = `,"result":{"type":"data","data":`, `}}`
	i := bytes.IndexByte(b, ',')
	if i < 0 || !bytes.HasPrefix(b[i:], []byte(mid)) || !bytes.HasSuffix(b, []byte(tail)) || len(b)-len(tail) <= i+len(mid) {
		return nil, false
	}
	return b[i+len(mid) : len(b)-len(tail)], true
}

// callID reads the number after `{"id":` at the start of b, when it is not
// the subscription's id.
func callID(b []byte) (int64, bool) {
	const head = `{"id":`
	if !bytes.HasPrefix(b, []byte(head)) {
		return 0, false
	}
	sc := jsonscan.Scanner{B: b, I: len(head)}
	id, ok := sc.Int()
	if !ok || id == subscriptionID || sc.I >= len(b) || b[sc.I] != ',' {
		return 0, false
	}
	return id, true
}

// decodeReply decodes {"id":N,"result":{"type":"data","data":D}} or
// {"id":N,"error":E}.
func decodeReply(b []byte) callReply {
	if d, ok := plainReply(b); ok && json.Valid(d) {
		return callReply{data: append(json.RawMessage(nil), d...)}
	}
	var m struct {
		Result *struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"result"`
		Error *wire.ErrorShape `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return callReply{err: &Error{Code: CodeInvalidResponse, Message: fmt.Sprintf("websocket reply %.200s", b)}}
	}
	switch {
	case m.Error != nil:
		return callReply{terr: m.Error}
	case m.Result == nil || m.Result.Type != "data" || len(m.Result.Data) == 0:
		return callReply{err: &Error{Code: CodeInvalidResponse, Message: fmt.Sprintf("websocket reply %.200s", b)}}
	}
	return callReply{data: append(json.RawMessage(nil), m.Result.Data...)}
}

// SubmitOn is Submit over sub's WebSocket, as a mutation: the same answers
// (a rejection is rej; ErrSocketEnded and other transport failures are
// retryable errors).
func (c *Client) SubmitOn(ctx context.Context, sub *Subscription, env kbcore.Envelope) (Ack, *kbcore.Rejection, error) {
	data, terr, err := sub.call(ctx, "mutation", wire.PathCommand, encodeEnvelope(env))
	if err != nil {
		return Ack{}, nil, err
	}
	return commandAnswer(data, terr)
}

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/subspace/kbkit/wire"

	"github.com/coder/websocket"

	"github.com/subspace/kbkit/internal/jsonscan"
	"github.com/subspace/kbkit/internal/wsframe"
	"github.com/subspace/kbkit/server/dispatch"
	"github.com/subspace/kbkit/server/store"
)

// wsMessage is any message a tRPC client sends on the WebSocket: a
// request {id, jsonrpc?, method, params: {path, input, lastEventId?}},
// {id, method: "subscription.stop"}, or the connection parameters
// {method: "connectionParams", data}.
type wsMessage struct {
	ID      json.RawMessage `json:"id"`
	JSONRPC string          `json:"jsonrpc,omitempty"`
	Method  string          `json:"method"`
	Params  *wsParams       `json:"params"`
	Data    json.RawMessage `json:"data"`
}

type wsParams struct {
	Path  string          `json:"path"`
	Input json.RawMessage `json:"input"`
	// LastEventID is kept raw: a value of the wrong JSON type is the
	// subscription's BAD_REQUEST (parseOnPage), not the message's
	// PARSE_ERROR.
	LastEventID json.RawMessage `json:"lastEventId"`
}

// wsResponse is a server reply: {id, jsonrpc?, result} or {id, jsonrpc?,
// error}; wsResult.Type is started, data or stopped.
type wsResponse struct {
	ID      json.RawMessage  `json:"id"`
	JSONRPC string           `json:"jsonrpc,omitempty"`
	Result  *wsResult        `json:"result,omitempty"`
	Error   *wire.ErrorShape `json:"error,omitempty"`
}

type wsResult struct {
	Type string `json:"type"`
	// ID is the tracked event id (kb.onPage: the seq as a string).
	ID   string `json:"id,omitempty"`
	Data any    `json:"data,omitempty"`
}

// reconnectMessage asks tRPC clients to reconnect (sent on Shutdown).
var reconnectMessage = []byte(`{"id":null,"method":"reconnect"}`)

// wsConn is one WebSocket connection. It costs at most one goroutine
// while idle: its read loop, started after the upgrade (the handler's
// goroutine and net/http's buffers are released). The read loop answers
// PING at once and queues every other message; a worker handles the
// queue in order, so a window's commands sent on the socket keep their
// order, and runs only while the queue is not empty. Everything the
// server sends (replies, events of every subscription, pongs, the close
// frame) goes through one outbound queue, written by a writer goroutine
// that runs only while the queue is not empty and writes everything
// queued in one write. A kb.onPage subscription is a dispatch.Sink: the
// hub appends its events to the queue, with no goroutine or channel per
// subscription.
type wsConn struct {
	s      *Server
	ws     wsSocket
	fr     frameReader // read loop only
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed once the connection is over
	outCap int           // queued messages past which a live event makes its subscription slow

	dev        store.Device // valid once authed
	authed     bool
	needParams bool         // ?connectionParams=1: the first message carries them
	addr       string       // the remote address (unknown tokens are limited per address)
	devID      atomic.Value // string: dev.DeviceID, for revocation (other goroutines)
	gotFirst   atomic.Bool  // a first message arrived (the connectionParams deadline)
	paramsT    *time.Timer  // the connectionParams deadline
	closeSent  atomic.Bool  // a close frame is queued: what the client sends now is ignored

	// Requests queue here and are handled in order by a worker goroutine
	// that runs only while the queue is not empty, so an idle socket (a
	// window that only listens) costs no goroutine and no buffer for it.
	qmu      sync.Mutex
	queue    []wsMessage
	working  bool
	workerWG sync.WaitGroup
	pending  atomic.Int64 // queued + running messages
	draining atomic.Bool

	// mu guards what follows. Lock order: the hub's lock, then mu (the
	// hub calls the subscriptions' Sink methods with its lock held), so
	// nothing calls the hub while holding mu.
	mu       sync.Mutex
	subs     map[string]*wsSub
	out      []outMsg // the outbound queue
	writing  bool     // a writer goroutine runs
	closing  bool     // a close frame is queued (or the connection ends): nothing more is queued
	broken   bool     // a write failed: nothing more is written
	slow     []*wsSub // dropped by the hub (ErrSlow): resubscribed once out is written
	room     chan struct{}
	writerWG sync.WaitGroup
	subWG    sync.WaitGroup // kb.onInvalidate streams
	deadline time.Time      // the write deadline set (writers only, one at a time)
}

// wsSocket is the connection under a wsConn.
type wsSocket struct{ nc net.Conn }

// CloseNow closes the TCP connection without a close handshake.
func (w wsSocket) CloseNow() error { return w.nc.Close() }

// outMsg is one queued frame: its payload is a followed by b (a
// subscription's prefix and an event's shared bytes).
type outMsg struct {
	op    byte
	event bool
	a, b  []byte
}

// wsSub is one subscription of a connection. Its fields are guarded by
// wsConn.mu, except those set before it is shared.
type wsSub struct {
	c      *wsConn
	key    string
	id     json.RawMessage
	rpc    string
	path   string
	pageID string
	prefix []byte // kb.onPage: the start of its event messages

	hs      *dispatch.Subscription // the hub's, nil while none
	last    int64                  // kb.onPage: the last seq queued
	started bool                   // "started" is queued: events may follow
	early   []outMsg               // events that came before "started"
	ended   bool                   // stopped or ended: whoever sets it releases the device's count
	dropped bool                   // the hub ended hs (Ended was called)
	failed  error                  // the hub ended it before "started"

	// kb.onInvalidate
	cancel  context.CancelFunc
	stopped atomic.Bool
}

// closeTimeout bounds the close handshake once the server has sent its
// close frame.
const closeTimeout = 2 * time.Second

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if s.closing.Load() {
		s.writeOne(w, callResult{err: &callError{code: wire.CodeServiceUnavailable, message: "server shutting down, reconnect",
			retryable: true, retryAfter: time.Second}})
		return
	}
	c := &wsConn{s: s, subs: map[string]*wsSub{}, addr: remoteHost(r), done: make(chan struct{})}
	c.needParams = r.URL.Query().Get("connectionParams") == "1"
	if tok, ok := bearer(r); ok {
		dev, cerr := s.authenticate(r.Context(), c.addr, tok)
		if cerr != nil {
			s.writeOne(w, callResult{err: cerr})
			return
		}
		c.setDevice(dev)
	} else if !c.needParams {
		_, cerr := s.authenticate(r.Context(), c.addr, "")
		s.writeOne(w, callResult{err: cerr})
		return
	}
	// Origins are not checked: authentication is a bearer token or
	// connectionParams, never an ambient credential such as a cookie, so a
	// foreign page gains nothing from opening a socket.
	nc, pending, err := acceptWS(w, r, s.opts.WriteTimeout)
	if err != nil {
		s.log.Debug("websocket: accept failed", "err", err)
		return
	}
	c.ws = wsSocket{nc: nc}
	c.fr = frameReader{wsframe.Reader{Src: nc, Pre: pending, Limit: s.opts.MaxBody, MustMask: true, Control: c.control}}
	c.outCap = 256
	if s.hub != nil {
		c.outCap = max(4, 4*s.hub.Buffer())
	}
	c.ctx, c.cancel = context.WithCancel(s.baseCtx)

	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		b := wsframe.AppendFrame(nil, wsframe.OpText, reconnectMessage, nil)
		b = wsframe.AppendFrame(b, wsframe.OpClose, closePayload(websocket.StatusGoingAway, "server shutting down"), nil)
		_, _ = nc.Write(b)
		_ = nc.Close()
		c.cancel()
		return
	}
	s.conns[c] = struct{}{}
	s.wsWG.Add(1)
	s.mu.Unlock()
	s.metrics.websockets.Inc()
	if t := s.opts.Limits.ParamsTimeout; c.needParams && t > 0 {
		c.paramsT = time.AfterFunc(t, func() {
			if !c.gotFirst.Load() {
				s.metrics.refused.WithLabelValues("params_timeout").Inc()
				c.closeWith(websocket.StatusPolicyViolation, fmt.Sprintf("no connectionParams message within %s", t))
			}
		})
	}
	// The read loop runs in a goroutine of its own: this one (net/http's,
	// with its deep stack) ends here.
	go c.run()
}

// run is the connection's read loop; the connection ends with it.
func (c *wsConn) run() {
	defer func() {
		if p := recover(); p != nil {
			c.s.recovered("websocket read loop", p, "device_id", c.dev.DeviceID)
			c.closeWith(websocket.StatusInternalError, "internal error")
		}
		c.finish()
		s := c.s
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.metrics.websockets.Dec()
		s.wsWG.Done()
	}()
	for {
		typ, data, rerr := c.fr.next()
		if rerr != nil {
			c.readEnded(rerr)
			return
		}
		c.onMessage(typ, data)
	}
}

// onMessage handles one message of the client. It is a function of its
// own so that the read loop's frame is small while it waits: the idle
// goroutine's stack then shrinks to a few KB.
func (c *wsConn) onMessage(typ byte, data []byte) {
	if !c.gotFirst.Swap(true) && c.paramsT != nil {
		c.paramsT.Stop()
	}
	if c.closeSent.Load() { // closing: only the close handshake is read
		c.fr.Discard = true
		return
	}
	// Text frames of UTF-8 only (spec/PROTOCOL.md section 5).
	if typ != wsframe.OpText {
		c.closeWith(websocket.StatusUnsupportedData, "binary frames are not supported: send text frames")
		return
	}
	if !utf8.Valid(data) {
		c.closeWith(websocket.StatusInvalidFramePayloadData, "a text frame that is not valid UTF-8")
		return
	}
	switch string(data) {
	case "PING":
		c.writeRaw([]byte("PONG"))
		return
	case "PONG":
		return
	}
	if c.needParams {
		c.connectionParams(data)
		return
	}
	msgs, cerr := parseWSMessages(data)
	if cerr == nil && c.s.opts.Limits.MaxBatch > 0 && len(msgs) > c.s.opts.Limits.MaxBatch {
		c.s.metrics.refused.WithLabelValues("batch").Inc()
		cerr = errorf(wire.CodePayloadTooLarge, "%d messages in one frame: at most %d", len(msgs), c.s.opts.Limits.MaxBatch)
	}
	if cerr != nil {
		c.send(wsResponse{Error: ptr(cerr.shape(""))})
		return
	}
	for _, m := range msgs {
		if c.draining.Load() && m.Method != "subscription.stop" {
			c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Error: ptr((&callError{code: wire.CodeServiceUnavailable,
				message: "server shutting down, reconnect", retryable: true}).shape(m.path()))})
			continue
		}
		if !c.enqueue(m) {
			c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Error: ptr((&callError{code: wire.CodeTooManyRequests,
				message: fmt.Sprintf("more than %d requests waiting on this socket", maxQueued), retryable: true}).shape(m.path()))})
		}
	}
}

// readEnded handles the end of the read side: the peer's close frame is
// answered, a protocol violation is closed with its status (and the
// client's close awaited), an I/O error or timeout just ends.
func (c *wsConn) readEnded(cerr *closeErr) {
	switch {
	case cerr.code == 0: // the peer is gone, or the close handshake timed out
	case errors.Is(cerr.err, io.EOF): // the peer's close frame
		c.mu.Lock()
		if !c.closing {
			c.queueCloseLocked(cerr.code, "")
		}
		c.mu.Unlock()
	default:
		if errors.Is(cerr.err, wsframe.ErrMessageTooBig) {
			c.s.log.Info("websocket: message larger than the limit, closed", "device_id", c.dev.DeviceID, "limit", c.s.opts.MaxBody)
		}
		c.closeWith(cerr.code, cerr.reason)
		// Read (and drop) what the client still sends until its close
		// frame, so that closing the TCP connection cannot reset it before
		// the client has read ours.
		c.fr.Discard = true
		for {
			if _, _, err := c.fr.next(); err != nil {
				return
			}
		}
	}
}

// control answers a ping frame.
func (c *wsConn) control(op byte, payload []byte) {
	if op == wsframe.OpPing {
		c.mu.Lock()
		c.enqueueLocked(outMsg{op: wsframe.OpPong, a: bytes.Clone(payload)})
		c.mu.Unlock()
	}
}

// closeWith queues a close frame with a status and a reason the client
// can read; the connection ends once the client has answered it, or
// after closeTimeout. Safe from any goroutine; it does not wait.
func (c *wsConn) closeWith(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	if !c.closing {
		c.queueCloseLocked(code, reason)
	}
	c.mu.Unlock()
	c.closeSent.Store(true)
	_ = c.ws.nc.SetReadDeadline(time.Now().Add(closeTimeout))
}

func (c *wsConn) queueCloseLocked(code websocket.StatusCode, reason string) {
	c.enqueueLocked(outMsg{op: wsframe.OpClose, a: closePayload(code, reason)})
	c.closing = true
}

// finish ends the connection: its subscriptions end (without a
// message), calls in progress are canceled, what is queued is written
// (the close frame), and the TCP connection is closed.
func (c *wsConn) finish() {
	if c.paramsT != nil {
		c.paramsT.Stop()
	}
	c.cancel()
	c.mu.Lock()
	c.closing = true
	var subs []*wsSub
	for _, sub := range c.subs {
		subs = append(subs, sub)
	}
	c.mu.Unlock()
	for _, sub := range subs {
		c.endSub(sub)
	}
	c.workerWG.Wait()
	c.subWG.Wait()
	flushed := make(chan struct{})
	go func() { c.writerWG.Wait(); close(flushed) }()
	t := time.NewTimer(closeTimeout)
	select {
	case <-flushed:
	case <-t.C:
	}
	t.Stop()
	_ = c.ws.nc.Close()
	<-flushed
	c.mu.Lock()
	c.broken, c.out = true, nil
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
	c.mu.Unlock()
	close(c.done)
}

// endSub ends a subscription for good (stop, or the connection ends):
// false if it had ended already.
func (c *wsConn) endSub(sub *wsSub) bool {
	c.mu.Lock()
	if sub.ended {
		c.mu.Unlock()
		return false
	}
	sub.ended = true
	if c.subs[sub.key] == sub {
		delete(c.subs, sub.key)
	}
	hs := sub.hs
	sub.hs, sub.early = nil, nil
	c.mu.Unlock()
	if sub.cancel != nil { // kb.onInvalidate: its stream releases the count
		sub.cancel()
		return true
	}
	if hs != nil {
		hs.Close()
	}
	c.s.releaseSubscription(c.dev.DeviceID)
	return true
}
func (m wsMessage) path() string {
	if m.Params == nil {
		return ""
	}
	return m.Params.Path
}

// connectionParams handles the first message of a ?connectionParams=1
// connection: {"method":"connectionParams","data":{"token":"..."}}. Other
// keys of data are ignored (connectionParams is tRPC's general bag). A
// failure answers {id: null, error} and closes the socket.
func (c *wsConn) connectionParams(data []byte) bool {
	c.needParams = false
	var m wsMessage
	var cerr *callError
	if err := json.Unmarshal(data, &m); err != nil || m.Method != "connectionParams" {
		cerr = errorf(wire.CodeParseError, "Malformed TRPCConnectionParamsMessage: the first message must be {\"method\":\"connectionParams\",\"data\":{\"token\":...}}")
	} else {
		var params map[string]any
		if len(m.Data) > 0 && !bytes.Equal(m.Data, []byte("null")) {
			if err := json.Unmarshal(m.Data, &params); err != nil {
				cerr = errorf(wire.CodeParseError, "connectionParams: data must be an object: %v", err)
			}
		}
		if cerr == nil {
			switch tok := params["token"].(type) {
			case string:
				var dev store.Device
				if dev, cerr = c.s.authenticate(c.ctx, c.addr, tok); cerr == nil {
					c.setDevice(dev)
				}
			case nil:
				if !c.authed {
					_, cerr = c.s.authenticate(c.ctx, c.addr, "")
				}
			default:
				cerr = errorf(wire.CodeBadRequest, "connectionParams.token: expected a string")
			}
		}
	}
	if cerr != nil {
		c.s.count("unknown", cerr)
		c.send(wsResponse{Error: ptr(cerr.shape(""))})
		c.closeWith(websocket.StatusPolicyViolation, cerr.code)
		return false
	}
	return true
}

// parseWSMessages parses one message or an array of them (wsLink batches).
func parseWSMessages(data []byte) ([]wsMessage, *callError) {
	data = bytes.TrimSpace(data)
	if m, ok := plainWSMessage(data); ok {
		return []wsMessage{m}, nil
	}
	if !json.Valid(data) {
		return nil, errorf(wire.CodeParseError, "message is not valid JSON: %s", jsonSyntaxError(data))
	}
	var raws []json.RawMessage
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, errorf(wire.CodeParseError, "%v", err)
		}
	} else {
		raws = []json.RawMessage{data}
	}
	msgs := make([]wsMessage, 0, len(raws))
	for _, raw := range raws {
		var m wsMessage
		if cerr := decodeStrict(raw, &m); cerr != nil {
			return nil, errorf(wire.CodeParseError, "%s", cerr.message)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// maxQueued bounds the requests waiting on one socket.
const maxQueued = 64

// enqueue queues a request, starting the worker if it is not running;
// false when the queue is full.
func (c *wsConn) enqueue(m wsMessage) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if len(c.queue) >= maxQueued {
		return false
	}
	c.pending.Add(1)
	c.queue = append(c.queue, m)
	if !c.working {
		c.working = true
		c.workerWG.Add(1)
		c.s.tasks.Go(c.worker)
	}
	return true
}

// worker handles queued requests in order and exits when the queue is
// empty (or the connection ends). A command's reply (answerCommand) is
// queued without starting the writer: before its next request the worker
// starts it, and once its queue is empty (a closed loop's window sends
// one command at a time) it writes the reply itself, no longer the
// socket's worker, instead of handing it to a writer goroutine.
func (c *wsConn) worker() {
	for {
		c.qmu.Lock()
		if len(c.queue) == 0 || c.ctx.Err() != nil {
			c.pending.Add(-int64(len(c.queue)))
			c.queue, c.working = nil, false
			c.qmu.Unlock()
			c.workerWG.Done()
			c.writeQueued()
			return
		}
		m := c.queue[0]
		c.queue[0] = wsMessage{}
		c.queue = c.queue[1:]
		c.qmu.Unlock()
		c.startWriter()
		c.handle(m)
		c.pending.Add(-1)
	}
}

// handle answers one request message.
func (c *wsConn) handle(m wsMessage) {
	reply := func(res *wsResult, cerr *callError) {
		r := wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Result: res}
		if cerr != nil {
			r.Result, r.Error = nil, ptr(cerr.shape(m.path()))
		}
		c.send(r)
	}
	defer func() {
		if p := recover(); p != nil {
			reply(nil, c.s.recovered("websocket call", p, "path", m.path(), "device_id", c.dev.DeviceID))
		}
	}()
	idKey, ok := requestID(m.ID)
	if !ok {
		reply(nil, errorf(wire.CodeParseError, "`id` is required: a number or a string"))
		return
	}
	if m.Method == "subscription.stop" {
		c.mu.Lock()
		sub := c.subs[idKey] // the id is free again once "stopped" is sent
		c.mu.Unlock()
		if sub != nil {
			sub.stopped.Store(true)
			if c.endSub(sub) && sub.cancel != nil {
				return // its stream answers "stopped"
			}
		}
		// Unknown or already ended: stopped all the same, so that every
		// subscription.stop gets its reply.
		reply(&wsResult{Type: "stopped"}, nil)
		return
	}
	if m.Params == nil {
		reply(nil, errorf(wire.CodeParseError, "params: missing ({path, input})"))
		return
	}
	switch m.Method {
	case typeQuery, typeMutation, typeSubscription:
	default:
		reply(nil, errorf(wire.CodeParseError, "method: %q is not query, mutation, subscription or subscription.stop", m.Method))
		return
	}
	path := m.Params.Path
	start := time.Now()
	var cerr *callError
	defer func() {
		c.s.count(path, cerr)
		c.s.logCall(c.ctx, "ws", path, c.dev.DeviceID, cerr, time.Since(start))
	}()
	if typ, ok := procedures[path]; !ok || typ != m.Method {
		cerr = errorf(wire.CodeNotFound, "No %q-procedure on path %q", m.Method, path)
		reply(nil, cerr)
		return
	}
	if m.Method != typeSubscription {
		var data any
		data, cerr = c.s.call(c.ctx, c.dev, path, m.Params.Input)
		if r, ok := data.(committedCommand); ok && cerr == nil {
			c.answerCommand(m, r)
		} else if cerr != nil {
			reply(nil, cerr)
		} else {
			reply(&wsResult{Type: "data", Data: data}, nil)
		}
		if path == wire.PathCommand {
			c.s.metrics.commandSeconds.WithLabelValues("ws").Add(time.Since(start).Seconds())
		}
		return
	}
	cerr = c.subscribe(m, idKey)
	if cerr != nil {
		reply(nil, cerr)
	}
}

// requestID checks a request id (a JSON number or string) and returns it
// as a map key.
func requestID(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	// What json.Unmarshal into an any reads as a string or a float64,
	// without it.
	s := jsonscan.Scanner{B: raw}
	switch c := raw[0]; {
	case c == '"':
		if _, _, ok := s.Str(); !ok || !s.End() {
			return "", false
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if !s.Number() || !s.End() {
			return "", false
		}
		if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
			return "", false // out of a float64's range
		}
	default:
		return "", false
	}
	return string(raw), true
}

func ptr[T any](v T) *T { return &v }

func (c *wsConn) setDevice(dev store.Device) {
	c.dev, c.authed = dev, true
	c.devID.Store(dev.DeviceID)
}

// deviceID is the authenticated device, "" before authentication; safe
// from any goroutine.
func (c *wsConn) deviceID() string {
	id, _ := c.devID.Load().(string)
	return id
}

var (
	keysWSMessage = []string{"id", "method", "params"}
	keysWSParams  = []string{"path", "input"}
)

// plainWSMessage reads, without reflection, the usual call message:
// {"id":N or "S","method":"M","params":{"path":"P","input":V}}, keys in
// any order, each once, plain strings (no escapes), V any valid JSON
// value; false on anything else, which parseWSMessages then decodes (and
// explains) as before. What it reads is what the reflective decoding
// reads (TestPlainWSMessage), with the bytes copied (data is the read
// loop's buffer).
func plainWSMessage(data []byte) (wsMessage, bool) {
	if len(data) == 0 || data[0] != '{' {
		return wsMessage{}, false
	}
	data = bytes.Clone(data)
	s := jsonscan.Scanner{B: data}
	var m wsMessage
	ok := s.Object(keysWSMessage, func(k int) bool {
		switch k {
		case 0:
			s.WS()
			start := s.I
			var ok bool
			if s.Peek() == '"' {
				_, ok = s.Plain()
			} else {
				_, ok = s.Int()
			}
			m.ID = json.RawMessage(data[start:s.I:s.I])
			return ok
		case 1:
			v, ok := s.Plain()
			m.Method = string(v)
			return ok
		default:
			m.Params = &wsParams{}
			return s.Object(keysWSParams, func(k int) bool {
				if k == 0 {
					v, ok := s.Plain()
					m.Params.Path = string(v)
					return ok
				}
				v, ok := s.Skip()
				m.Params.Input = json.RawMessage(v[:len(v):len(v)])
				return ok
			})
		}
	})
	if !ok || !s.End() || m.ID == nil || m.Method == "" || m.Params == nil {
		return wsMessage{}, false
	}
	return m, true
}

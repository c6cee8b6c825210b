package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

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
	Path        string          `json:"path"`
	Input       json.RawMessage `json:"input"`
	LastEventID *string         `json:"lastEventId"`
}

// wsResponse is a server reply: {id, jsonrpc?, result} or {id, jsonrpc?,
// error}; wsResult.Type is started, data or stopped.
type wsResponse struct {
	ID      json.RawMessage `json:"id"`
	JSONRPC string          `json:"jsonrpc,omitempty"`
	Result  *wsResult       `json:"result,omitempty"`
	Error   *ErrorShape     `json:"error,omitempty"`
}

type wsResult struct {
	Type string `json:"type"`
	// ID is the tracked event id (kb.onPage: the seq as a string).
	ID   string `json:"id,omitempty"`
	Data any    `json:"data,omitempty"`
}

// reconnectMessage asks tRPC clients to reconnect (sent on Shutdown).
var reconnectMessage = []byte(`{"id":null,"method":"reconnect"}`)

// wsConn is one WebSocket connection. Its read loop answers PING at once
// and queues every other message; one worker handles the queue in order,
// so a window's commands sent on the socket keep their order. Each
// subscription streams from its own goroutine.
type wsConn struct {
	s      *Server
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc

	dev        store.Device // valid once authed
	authed     bool
	needParams bool         // ?connectionParams=1: the first message carries them
	addr       string       // the remote address (unknown tokens are limited per address)
	devID      atomic.Value // string: dev.DeviceID, for revocation (other goroutines)
	gotFirst   atomic.Bool  // a first message arrived (the connectionParams deadline)

	// Requests queue here and are handled in order by a worker goroutine
	// that runs only while the queue is not empty, so an idle socket (a
	// window that only listens) costs no goroutine and no buffer for it.
	qmu      sync.Mutex
	queue    []wsMessage
	working  bool
	workerWG sync.WaitGroup
	pending  atomic.Int64 // queued + running messages
	draining atomic.Bool

	mu    sync.Mutex
	subs  map[string]*wsSub
	subWG sync.WaitGroup
}

type wsSub struct {
	cancel  context.CancelFunc
	stopped atomic.Bool // by subscription.stop
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if s.closing.Load() {
		s.writeOne(w, callResult{err: &callError{code: CodeServiceUnavailable, message: "server shutting down, reconnect",
			retryable: true, retryAfter: time.Second}})
		return
	}
	c := &wsConn{s: s, subs: map[string]*wsSub{}, addr: remoteHost(r)}
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
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		s.log.Debug("websocket: accept failed", "err", err)
		return
	}
	ws.SetReadLimit(s.opts.MaxBody)
	c.ws = ws
	c.ctx, c.cancel = context.WithCancel(s.baseCtx)

	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		_ = ws.Write(c.ctx, websocket.MessageText, reconnectMessage)
		_ = ws.Close(websocket.StatusGoingAway, "server shutting down")
		c.cancel()
		return
	}
	s.conns[c] = struct{}{}
	s.wsWG.Add(1)
	s.mu.Unlock()
	s.metrics.websockets.Inc()
	if t := s.opts.Limits.ParamsTimeout; c.needParams && t > 0 {
		timer := time.AfterFunc(t, func() {
			if !c.gotFirst.Load() {
				s.metrics.refused.WithLabelValues("params_timeout").Inc()
				c.closeWith(websocket.StatusPolicyViolation, fmt.Sprintf("no connectionParams message within %s", t))
			}
		})
		defer timer.Stop()
	}
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.metrics.websockets.Dec()
		s.wsWG.Done()
	}()
	c.run()
}

func (c *wsConn) run() {
	defer func() {
		if p := recover(); p != nil {
			c.s.recovered("websocket read loop", p, "device_id", c.dev.DeviceID)
			_ = c.ws.Close(websocket.StatusInternalError, "internal error")
		}
		c.cancel()
		c.workerWG.Wait()
		c.subWG.Wait()
		_ = c.ws.CloseNow()
	}()
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusMessageTooBig || errors.Is(err, websocket.ErrMessageTooBig) {
				c.s.log.Info("websocket: message larger than the limit, closed", "device_id", c.dev.DeviceID, "limit", c.s.opts.MaxBody)
			}
			return
		}
		c.gotFirst.Store(true)
		// Text frames of UTF-8 only (spec/PROTOCOL.md section 5).
		if typ != websocket.MessageText {
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
			continue
		case "PONG":
			continue
		}
		if c.needParams {
			if !c.connectionParams(data) {
				return
			}
			continue
		}
		msgs, cerr := parseWSMessages(data)
		if cerr == nil && c.s.opts.Limits.MaxBatch > 0 && len(msgs) > c.s.opts.Limits.MaxBatch {
			c.s.metrics.refused.WithLabelValues("batch").Inc()
			cerr = errorf(CodePayloadTooLarge, "%d messages in one frame: at most %d", len(msgs), c.s.opts.Limits.MaxBatch)
		}
		if cerr != nil {
			c.send(wsResponse{Error: ptr(cerr.shape(""))})
			continue
		}
		for _, m := range msgs {
			if c.draining.Load() && m.Method != "subscription.stop" {
				c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Error: ptr((&callError{code: CodeServiceUnavailable,
					message: "server shutting down, reconnect", retryable: true}).shape(m.path()))})
				continue
			}
			if !c.enqueue(m) {
				c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Error: ptr((&callError{code: CodeTooManyRequests,
					message: fmt.Sprintf("more than %d requests waiting on this socket", maxQueued), retryable: true}).shape(m.path()))})
			}
		}
	}
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
		cerr = errorf(CodeParseError, "Malformed TRPCConnectionParamsMessage: the first message must be {\"method\":\"connectionParams\",\"data\":{\"token\":...}}")
	} else {
		var params map[string]any
		if len(m.Data) > 0 && !bytes.Equal(m.Data, []byte("null")) {
			if err := json.Unmarshal(m.Data, &params); err != nil {
				cerr = errorf(CodeParseError, "connectionParams: data must be an object: %v", err)
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
				cerr = errorf(CodeBadRequest, "connectionParams.token: expected a string")
			}
		}
	}
	if cerr != nil {
		c.s.count("unknown", cerr)
		c.send(wsResponse{Error: ptr(cerr.shape(""))})
		_ = c.ws.Close(websocket.StatusPolicyViolation, cerr.code)
		return false
	}
	return true
}

// parseWSMessages parses one message or an array of them (wsLink batches).
func parseWSMessages(data []byte) ([]wsMessage, *callError) {
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		return nil, errorf(CodeParseError, "message is not valid JSON: %s", jsonSyntaxError(data))
	}
	var raws []json.RawMessage
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, errorf(CodeParseError, "%v", err)
		}
	} else {
		raws = []json.RawMessage{data}
	}
	msgs := make([]wsMessage, 0, len(raws))
	for _, raw := range raws {
		var m wsMessage
		if cerr := decodeStrict(raw, &m); cerr != nil {
			return nil, errorf(CodeParseError, "%s", cerr.message)
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
		go c.worker()
	}
	return true
}

// worker handles queued requests in order and exits when the queue is
// empty (or the connection ends).
func (c *wsConn) worker() {
	defer c.workerWG.Done()
	for {
		c.qmu.Lock()
		if len(c.queue) == 0 || c.ctx.Err() != nil {
			c.pending.Add(-int64(len(c.queue)))
			c.queue, c.working = nil, false
			c.qmu.Unlock()
			return
		}
		m := c.queue[0]
		c.queue[0] = wsMessage{}
		c.queue = c.queue[1:]
		c.qmu.Unlock()
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
		reply(nil, errorf(CodeParseError, "`id` is required: a number or a string"))
		return
	}
	if m.Method == "subscription.stop" {
		c.mu.Lock()
		sub := c.subs[idKey]
		delete(c.subs, idKey) // the id is free again once "stopped" is sent
		c.mu.Unlock()
		if sub != nil {
			sub.stopped.Store(true)
			sub.cancel() // its stream answers "stopped"
			return
		}
		// Unknown or already ended: stopped all the same, so that every
		// subscription.stop gets its reply.
		reply(&wsResult{Type: "stopped"}, nil)
		return
	}
	if m.Params == nil {
		reply(nil, errorf(CodeParseError, "params: missing ({path, input})"))
		return
	}
	switch m.Method {
	case typeQuery, typeMutation, typeSubscription:
	default:
		reply(nil, errorf(CodeParseError, "method: %q is not query, mutation, subscription or subscription.stop", m.Method))
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
		cerr = errorf(CodeNotFound, "No %q-procedure on path %q", m.Method, path)
		reply(nil, cerr)
		return
	}
	if m.Method != typeSubscription {
		var data any
		data, cerr = c.s.call(c.ctx, c.dev, path, m.Params.Input)
		if cerr != nil {
			reply(nil, cerr)
			return
		}
		reply(&wsResult{Type: "data", Data: data}, nil)
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
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", false
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false
	}
	switch v.(type) {
	case string, float64:
		return string(raw), true
	}
	return "", false
}

// subscribe starts a kb.onPage or kb.onInvalidate subscription: it answers
// {type: "started"} and streams from a goroutine until stopped.
func (c *wsConn) subscribe(m wsMessage, idKey string) *callError {
	c.mu.Lock()
	_, dup := c.subs[idKey]
	open := len(c.subs)
	c.mu.Unlock()
	if dup {
		return errorf(CodeBadRequest, "Duplicate id %s", idKey)
	}
	if n := c.s.opts.Limits.MaxSubscriptionsPerSocket; n > 0 && open >= n {
		c.s.metrics.refused.WithLabelValues("subscriptions").Inc()
		return errorf(CodeTooManyRequests, "%d subscriptions open on this socket: at most %d (stop one first)", open, n)
	}
	if !c.s.holdSubscription(c.dev.DeviceID) {
		c.s.metrics.refused.WithLabelValues("subscriptions").Inc()
		return errorf(CodeTooManyRequests, "this device has %d subscriptions open on this server: stop one first", c.s.opts.Limits.MaxSubscriptionsPerDevice)
	}
	held := true
	defer func() {
		if held {
			c.s.releaseSubscription(c.dev.DeviceID)
		}
	}()
	if cerr := c.s.limiter.allow(c.dev.DeviceID); cerr != nil {
		return cerr
	}
	ctx, cancel := context.WithCancel(c.ctx)
	sub := &wsSub{cancel: cancel}
	var stream func()
	switch m.Params.Path {
	case PathOnPage:
		pageID, after, cerr := parseOnPage(m.Params.Input, m.Params.LastEventID)
		if cerr != nil {
			cancel()
			return cerr
		}
		ws, err := c.s.st.PageWorkspace(ctx, pageID)
		if err != nil || ws != c.dev.WorkspaceID {
			cancel()
			if err == nil {
				err = store.ErrForbidden
			}
			return storeError(err)
		}
		if c.s.hub == nil {
			cancel()
			return errorf(CodeInternalServerError, "this server has no dispatcher: subscriptions are unavailable")
		}
		hs, err := c.s.hub.Subscribe(ctx, pageID, after)
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				return &callError{code: CodeServiceUnavailable, message: "connection closing", retryable: true}
			}
			c.s.log.Warn("websocket: subscribe failed", "page_id", pageID, "err", err)
			return &callError{code: CodeServiceUnavailable, message: "subscription unavailable, retry", retryable: true, retryAfter: time.Second}
		}
		stream = func() { c.streamPage(ctx, m, sub, hs, pageID, after) }
	case PathOnInvalidate:
		topics, cerr := parseOnInvalidate(m.Params.Input)
		if cerr != nil {
			cancel()
			return cerr
		}
		is := c.s.inval.subscribe(c.dev.WorkspaceID, topics)
		stream = func() { c.streamInvalidations(ctx, m, sub, is) }
	default:
		cancel()
		return errorf(CodeNotFound, "No %q-procedure on path %q", m.Method, m.Params.Path)
	}
	c.mu.Lock()
	c.subs[idKey] = sub
	c.mu.Unlock()
	c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Result: &wsResult{Type: "started"}})
	c.subWG.Add(1)
	held = false // the stream releases it
	go func() {
		defer c.subWG.Done()
		defer c.s.releaseSubscription(c.dev.DeviceID)
		defer func() {
			if p := recover(); p != nil {
				cerr := c.s.recovered("websocket subscription", p, "path", m.path(), "device_id", c.dev.DeviceID)
				c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Error: ptr(cerr.shape(m.path()))})
			}
			cancel()
			c.mu.Lock()
			if c.subs[idKey] == sub {
				delete(c.subs, idKey)
			}
			c.mu.Unlock()
		}()
		stream()
	}()
	return nil
}

// streamPage sends a page's events as tRPC tracked events, in seq order
// without gaps. When the hub drops a subscriber that fell behind
// (dispatch.ErrSlow), it resubscribes after the last seq sent: the client
// never sees it.
func (c *wsConn) streamPage(ctx context.Context, m wsMessage, sub *wsSub, hs *dispatch.Subscription, pageID string, after int64) {
	prefix := eventPrefix(m)
	for {
		select {
		case ev, ok := <-hs.C():
			if ok {
				if ev.PageID != pageID || ev.Seq <= after {
					continue
				}
				if d := c.s.opts.eventDelay; d > 0 {
					time.Sleep(d)
				}
				if !c.sendEvent(prefix, ev.Wire(encodePageEvent)) {
					hs.Close()
					return
				}
				after = ev.Seq
				continue
			}
			err := hs.Err()
			hs.Close()
			if errors.Is(err, dispatch.ErrSlow) && ctx.Err() == nil {
				c.s.log.Debug("websocket: resubscribing a slow subscriber", "page_id", pageID, "after", after)
				c.s.resubscribes.Add(1)
				var serr error
				if hs, serr = c.s.hub.Subscribe(ctx, pageID, after); serr == nil {
					continue
				}
				err = serr
			}
			c.endSubscription(ctx, m, sub, err)
			return
		case <-ctx.Done():
			hs.Close()
			c.endSubscription(ctx, m, sub, ctx.Err())
			return
		}
	}
}

func (c *wsConn) streamInvalidations(ctx context.Context, m wsMessage, sub *wsSub, is *invSub) {
	defer c.s.inval.unsubscribe(is)
	for {
		select {
		case inv := <-is.ch:
			if !c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Result: &wsResult{Type: "data", Data: inv}}) {
				return
			}
		case <-ctx.Done():
			c.endSubscription(ctx, m, sub, ctx.Err())
			return
		}
	}
}

// endSubscription answers {type: "stopped"} to a subscription.stop, an
// error when the stream failed while the connection is up, and nothing
// when the connection is closing (the client reconnects and resubscribes).
func (c *wsConn) endSubscription(ctx context.Context, m wsMessage, sub *wsSub, err error) {
	switch {
	case sub.stopped.Load():
		c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Result: &wsResult{Type: "stopped"}})
	case c.ctx.Err() != nil || c.draining.Load():
	default:
		c.s.log.Warn("websocket: subscription ended", "path", m.path(), "err", err)
		c.send(wsResponse{ID: m.ID, JSONRPC: m.JSONRPC, Error: ptr((&callError{code: CodeServiceUnavailable,
			message: fmt.Sprintf("subscription ended (%v): subscribe again with the last event id", err), retryable: true}).shape(m.path()))})
	}
}

// A kb.onPage event goes out as {"id":<request id>[,"jsonrpc":...],
// "result":{"type":"data","id":"<seq>","data":{"seq":...,"cmd":...}}}: the
// part from "result" on is the same for every subscriber of the page, so
// it is encoded once per event (dispatch.Event.Wire) and only the short
// prefix of each subscription is prepended; no JSON work per subscriber.

// eventPrefix is a subscription's part of its event messages.
func eventPrefix(m wsMessage) []byte {
	b := append([]byte(`{"id":`), bytes.TrimSpace(m.ID)...)
	if m.JSONRPC != "" {
		v, _ := json.Marshal(m.JSONRPC)
		b = append(append(append(b, `,"jsonrpc":`...), v...), ',')
	} else {
		b = append(b, ',')
	}
	return b
}

// encodePageEvent is an event's shared part, `"result":{...}}`.
func encodePageEvent(ev *dispatch.Event) []byte {
	r, err := json.Marshal(wsResult{Type: "data", ID: strconv.FormatInt(ev.Seq, 10), Data: PageEvent{Seq: ev.Seq, Cmd: ev.Cmd}})
	if err != nil { // a payload the store wrote is valid JSON
		r = []byte(`null`)
	}
	return append(append([]byte(`"result":`), r...), '}')
}

// eventBufs are the buffers event messages are assembled in.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// sendEvent writes prefix+wire as one message.
func (c *wsConn) sendEvent(prefix, wire []byte) bool {
	bp := eventBufs.Get().(*[]byte)
	b := append(append((*bp)[:0], prefix...), wire...)
	ok := c.writeRaw(b)
	if cap(b) <= 64<<10 {
		*bp = b[:0]
		eventBufs.Put(bp)
	}
	return ok
}

// send writes one reply; false if the connection failed (it is then
// closed).
func (c *wsConn) send(v wsResponse) bool {
	b, err := json.Marshal(v)
	if err != nil {
		c.s.log.Error("websocket: encoding a reply", "err", err)
		return false
	}
	return c.writeRaw(b)
}

func (c *wsConn) writeRaw(b []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.s.opts.WriteTimeout)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		c.cancel()
		_ = c.ws.CloseNow()
		return false
	}
	return true
}

// drain is Shutdown for one connection: send reconnect, refuse new calls,
// let queued calls finish, close with 1001 (going away).
func (c *wsConn) drain(ctx context.Context) {
	c.draining.Store(true)
	c.writeRaw(reconnectMessage)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for c.pending.Load() > 0 && ctx.Err() == nil && c.ctx.Err() == nil {
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-c.ctx.Done():
		}
	}
	// The read loop sees the close and ends the connection; subscriptions
	// end without "stopped" (the client resubscribes elsewhere). A client
	// that never answers the close handshake is cut when ctx ends.
	closed := make(chan struct{})
	go func() {
		_ = c.ws.Close(websocket.StatusGoingAway, "server shutting down, reconnect")
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
		_ = c.ws.CloseNow()
	}
	c.cancel()
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

// closeWith closes the socket with a status and a reason the client can
// read, and ends the connection.
func (c *wsConn) closeWith(code websocket.StatusCode, reason string) {
	done := make(chan struct{})
	go func() {
		_ = c.ws.Close(code, reason)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second): // a peer that does not answer the close
		_ = c.ws.CloseNow()
	}
	c.cancel()
}

// holdSubscription counts one more subscription of the device, or false
// past Limits.MaxSubscriptionsPerDevice.
func (s *Server) holdSubscription(device string) bool {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if n := s.opts.Limits.MaxSubscriptionsPerDevice; n > 0 && s.subsByDev[device] >= n {
		return false
	}
	s.subsByDev[device]++
	return true
}

func (s *Server) releaseSubscription(device string) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if s.subsByDev[device]--; s.subsByDev[device] <= 0 {
		delete(s.subsByDev, device)
	}
}

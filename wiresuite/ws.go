package wiresuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/subspace/kbkit/wire"

	"github.com/coder/websocket"
)

// wsAuth is how a WebSocket authenticates (PROTOCOL.md section 2).
type wsAuth int

const (
	wsHeader wsAuth = iota // Authorization header on the upgrade
	wsParams               // ?connectionParams=1 and a first message
	wsNone                 // no token at all
	wsBoth                 // the Env's token in the header, token in connectionParams
)

// WS is one WebSocket of a check: a reader goroutine queues every message,
// and a transcript of the last messages goes into the diagnostics.
type WS struct {
	env  *Env
	url  string
	conn *websocket.Conn
	in   chan []byte
	done chan struct{}
	stop chan struct{}
	once sync.Once
	err  error // why the reader ended, once done is closed

	mu         sync.Mutex
	transcript []string
}

var errTimeout = errors.New("timed out")

func (e *Env) wsURL(query string) string {
	u := e.BaseURL
	switch {
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	}
	u += "/trpc"
	if query != "" {
		u += "?" + query
	}
	return u
}

// dialWS opens a WebSocket authenticated as auth says with token ("" =
// the Env's token). A refused upgrade returns the HTTP response.
func (e *Env) dialWS(ctx context.Context, auth wsAuth, token string) (*WS, *Response, error) {
	if token == "" {
		token = e.Token
	}
	query := ""
	h := http.Header{}
	switch auth {
	case wsHeader:
		h.Set("Authorization", "Bearer "+token)
	case wsParams:
		query = "connectionParams=1"
	case wsBoth:
		h.Set("Authorization", "Bearer "+e.Token)
		query = "connectionParams=1"
	}
	u := e.wsURL(query)
	dctx, cancel := context.WithTimeout(ctx, e.EventTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPHeader: h, HTTPClient: e.HTTP})
	if err != nil {
		var r *Response
		if resp != nil {
			r = &Response{Method: "GET (WebSocket upgrade)", URL: u, Status: resp.StatusCode, Header: resp.Header}
			if resp.Body != nil {
				buf := make([]byte, 64<<10)
				n, _ := readFull(resp.Body, buf)
				r.Body = buf[:n]
				resp.Body.Close()
			}
		}
		return nil, r, fmt.Errorf("WebSocket %s: %w", u, err)
	}
	conn.SetReadLimit(64 << 20)
	w := &WS{env: e, url: u, conn: conn, in: make(chan []byte, 4096), done: make(chan struct{}), stop: make(chan struct{})}
	go w.read()
	if auth == wsParams || auth == wsBoth {
		// Other keys of data are ignored (PROTOCOL.md 2).
		if err := w.sendJSON(ctx, map[string]any{"method": "connectionParams",
			"data": map[string]any{"token": token, "client": "kbkit-conformance-protocol"}}); err != nil {
			w.Close()
			return nil, nil, err
		}
	}
	return w, nil, nil
}

func readFull(r interface{ Read([]byte) (int, error) }, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (w *WS) read() {
	defer close(w.done)
	defer close(w.in)
	for {
		_, b, err := w.conn.Read(context.Background())
		if err != nil {
			w.err = err
			return
		}
		w.log("< ", b)
		select {
		case w.in <- b:
		case <-w.stop:
			w.err = errors.New("closed by the check")
			return
		}
	}
}

func (w *WS) log(dir string, b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.transcript = append(w.transcript, dir+excerpt(b, 400))
	if len(w.transcript) > 30 {
		w.transcript = w.transcript[len(w.transcript)-30:]
	}
}

// Close closes the socket.
func (w *WS) Close() {
	w.once.Do(func() { close(w.stop) })
	go func() { _ = w.conn.Close(websocket.StatusNormalClosure, "") }()
	select {
	case <-w.done:
	case <-time.After(2 * time.Second):
		_ = w.conn.CloseNow()
		<-w.done
	}
}

func (w *WS) sendRaw(ctx context.Context, b []byte) error {
	w.log("> ", b)
	if err := w.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return w.fail("", "", "writing a WebSocket message: %v", err)
	}
	return nil
}

func (w *WS) sendJSON(ctx context.Context, v any) error { return w.sendRaw(ctx, rawJSON(v)) }

// fail is a failure with the WebSocket transcript as the response.
func (w *WS) fail(expected, got any, format string, args ...any) *Failure {
	w.mu.Lock()
	t := strings.Join(w.transcript, "\n")
	w.mu.Unlock()
	return &Failure{Message: fmt.Sprintf(format, args...), Expected: show(expected), Got: show(got),
		Request: "WebSocket " + w.url, Response: t}
}

// next returns the next message, waiting at most the Env's EventTimeout.
func (w *WS) next(ctx context.Context) ([]byte, error) {
	return w.nextWithin(ctx, w.env.EventTimeout)
}

func (w *WS) nextWithin(ctx context.Context, d time.Duration) ([]byte, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case b, ok := <-w.in:
		if !ok {
			return nil, w.err
		}
		return b, nil
	case <-t.C:
		return nil, errTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// wsMsg is a server message (PROTOCOL.md 5.2).
type wsMsg struct {
	raw     []byte
	ID      json.RawMessage `json:"id"`
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Result  *struct {
		Type string          `json:"type"`
		ID   json.RawMessage `json:"id"`
		Data json.RawMessage `json:"data"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// recv returns the next JSON message; what names it for the failure.
func (w *WS) recv(ctx context.Context, what string) (*wsMsg, error) {
	b, err := w.next(ctx)
	if err != nil {
		if errors.Is(err, errTimeout) {
			return nil, w.fail(what, "nothing within "+w.env.EventTimeout.String(), "the server did not send %s", what)
		}
		return nil, w.fail(what, err.Error(), "the WebSocket ended before %s", what)
	}
	m := &wsMsg{raw: b}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, w.fail(what, excerpt(b, 300), "the message is not a JSON object of the protocol's shape: %v", err)
	}
	return m, nil
}

// reply returns the next message, which must answer request id.
func (w *WS) reply(ctx context.Context, id any, what string) (*wsMsg, error) {
	m, err := w.recv(ctx, what)
	if err != nil {
		return nil, err
	}
	if !sameJSON(m.ID, rawJSON(id)) {
		return nil, w.fail(fmt.Sprintf(`"id": %s`, rawJSON(id)), fmt.Sprintf(`"id": %s`, string(m.ID)),
			"%s: the next message is the reply to id %s, the only call this check has open (a reply echoes its request's id exactly, PROTOCOL.md 5.1); got a message with id %s",
			what, rawJSON(id), string(m.ID))
	}
	return m, nil
}

// data checks a {"id":ID,"result":{"type":"data","data":D}} and returns D.
func (w *WS) data(m *wsMsg, what string) (json.RawMessage, error) {
	if m.Error != nil {
		return nil, w.fail(`{"result":{"type":"data",...}}`, excerpt(m.raw, 300), "%s failed", what)
	}
	if m.Result == nil || m.Result.Type != "data" || m.Result.Data == nil {
		return nil, w.fail(`{"id":ID,"result":{"type":"data","data":...}}`, excerpt(m.raw, 300), "%s: not a data result", what)
	}
	return m.Result.Data, nil
}

// replyData is the data of the next message of id (what names it).
func (w *WS) replyData(ctx context.Context, id any, what string) (json.RawMessage, error) {
	m, err := w.reply(ctx, id, what)
	if err != nil {
		return nil, err
	}
	return w.data(m, what)
}

// wsError checks a {"id":ID,"error":ERROR} with the given code.
func (w *WS) wsError(m *wsMsg, code, path, what string) (*wire.ErrorShape, error) {
	if m.Error == nil || m.Result != nil {
		return nil, w.fail(fmt.Sprintf(`{"id":...,"error":{... %s}}`, code), excerpt(m.raw, 300), "%s: expected an error", what)
	}
	return checkErrShape(m.Error, code, path, func(exp, got any, format string, args ...any) *Failure {
		return w.fail(exp, got, what+": "+format, args...)
	})
}

// call sends a query or mutation and returns its reply.
func (w *WS) call(ctx context.Context, id any, method, path string, input any) (*wsMsg, error) {
	params := map[string]any{"path": path}
	if input != nil {
		params["input"] = input
	}
	if err := w.sendJSON(ctx, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	return w.reply(ctx, id, method+" "+path)
}

// subscribe starts a subscription and expects "started". lastEventID, when
// not nil, goes into params.
func (w *WS) subscribe(ctx context.Context, id any, path string, input any, lastEventID *string) error {
	params := map[string]any{"path": path, "input": input}
	if lastEventID != nil {
		params["lastEventId"] = *lastEventID
	}
	return w.subscribeParams(ctx, id, path, params)
}

// subscribeParams starts a subscription with the message's params as
// given and expects "started".
func (w *WS) subscribeParams(ctx context.Context, id any, path string, params map[string]any) error {
	if err := w.sendJSON(ctx, map[string]any{"id": id, "method": "subscription", "params": params}); err != nil {
		return err
	}
	m, err := w.reply(ctx, id, "the answer to subscription "+path)
	if err != nil {
		return err
	}
	if m.Result == nil || m.Result.Type != "started" {
		return w.fail(fmt.Sprintf(`{"id":%s,"result":{"type":"started"}}`, rawJSON(id)), excerpt(m.raw, 300),
			"a subscription is answered with started (PROTOCOL.md 5.1)")
	}
	return nil
}

// event checks one kb.onPage tracked event of subscription subID:
// {"id":subID,"result":{"type":"data","id":"<seq>","data":{"seq":seq,"cmd":{id,type,payload}}}}
// with the command the page logged at seq.
func (w *WS) event(ctx context.Context, subID any, p *page, seq int64) error {
	what := fmt.Sprintf("the event of seq %d", seq)
	m, err := w.reply(ctx, subID, what)
	if err != nil {
		return err
	}
	want := p.cmds[seq]
	expected := fmt.Sprintf(`{"id":%s,"result":{"type":"data","id":"%d","data":{"seq":%d,"cmd":{"id":%q,"type":%q,"payload":%s}}}}`,
		rawJSON(subID), seq, seq, want.ID, want.Type, want.Payload)
	if m.Result == nil || m.Result.Type != "data" {
		return w.fail(expected, excerpt(m.raw, 400), "%s: not a data event", what)
	}
	var tid string
	if err := json.Unmarshal(m.Result.ID, &tid); err != nil || tid != strconv.FormatInt(seq, 10) {
		return w.fail(expected, excerpt(m.raw, 400), "%s: result.id is the seq as a string (a tracked event, PROTOCOL.md 4.4)", what)
	}
	var d struct {
		Seq *int64 `json:"seq"`
		Cmd *struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		} `json:"cmd"`
	}
	if err := json.Unmarshal(m.Result.Data, &d); err != nil || d.Seq == nil || d.Cmd == nil {
		return w.fail(expected, excerpt(m.raw, 400), "%s: data is {seq, cmd}", what)
	}
	if *d.Seq != seq {
		return w.fail(expected, excerpt(m.raw, 400), "%s: events come in seq order without gaps or duplicates (got seq %d)", what, *d.Seq)
	}
	if d.Cmd.ID != want.ID || d.Cmd.Type != want.Type || !sameJSON(d.Cmd.Payload, want.Payload) {
		return w.fail(expected, excerpt(m.raw, 400), "%s: cmd is the command as logged ({id, type, payload})", what)
	}
	return nil
}

// events checks the events of seqs from..to, in order.
func (w *WS) events(ctx context.Context, subID any, p *page, from, to int64) error {
	for s := from; s <= to; s++ {
		if err := w.event(ctx, subID, p, s); err != nil {
			return err
		}
	}
	return nil
}

// quiet checks that no message arrives for the Env's Quiet time.
func (w *WS) quiet(ctx context.Context, why string) error {
	b, err := w.nextWithin(ctx, w.env.Quiet)
	switch {
	case errors.Is(err, errTimeout):
		return nil
	case err != nil:
		return w.fail("the socket stays open", err.Error(), "the WebSocket ended: %s", why)
	}
	return w.fail("no message", excerpt(b, 300), "%s", why)
}

// closed waits for the socket to end and returns its close status (-1 if
// it ended without a close frame).
func (w *WS) closed(ctx context.Context) (websocket.StatusCode, error) {
	t := time.NewTimer(w.env.EventTimeout)
	defer t.Stop()
	for {
		select {
		case _, ok := <-w.in:
			if !ok {
				return websocket.CloseStatus(w.err), nil
			}
		case <-t.C:
			return 0, w.fail("the socket closed", "still open after "+w.env.EventTimeout.String(), "the server did not close the WebSocket")
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/subspace/kbkit/wire"

	"github.com/subspace/kbkit/kbcore"
)

// Error is a tRPC error answer.
type Error struct {
	HTTPStatus int
	Code       string // tRPC code name, e.g. "CONFLICT", "NOT_FOUND"
	Message    string
	Retryable  bool
}

// CodeInvalidResponse is the Code of an answer that is not tRPC JSON (an
// HTML error page, a proxy's text): the client's own, no server sends it.
const CodeInvalidResponse = "INVALID_RESPONSE"

// Error reads "CODE (status): message": the server's answer, which callers
// wrap with what they were doing ("kb.whoami: UNAUTHORIZED (401): ...").
func (e *Error) Error() string {
	return fmt.Sprintf("%s (%d): %s", e.Code, e.HTTPStatus, e.Message)
}

// IsRetryable reports whether a command may be sent again with the same id:
// the server did not decide it (network error, 5xx, 429, retryable flag).
func IsRetryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable || e.HTTPStatus >= 500 || e.HTTPStatus == http.StatusTooManyRequests || e.HTTPStatus == http.StatusRequestTimeout
	}
	return err != nil && !errors.Is(err, context.Canceled)
}

// Client talks to one server as one device.
type Client struct {
	base  string
	token string
	http  *http.Client
	h1    *h1Pool // commands' transport (h1.go); nil: http
}

// New returns a client for the server at base (e.g. http://127.0.0.1:8080).
func New(base, token string) *Client {
	base = strings.TrimRight(base, "/")
	return &Client{base: base, token: token, http: &http.Client{Timeout: 30 * time.Second}, h1: h1For(base)}
}

type envelope struct {
	Result *struct {
		Data json.RawMessage `json:"data"`
	} `json:"result"`
	Error *wire.ErrorShape `json:"error"`
}

func (c *Client) do(req *http.Request) (json.RawMessage, *wire.ErrorShape, error) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, err
	}
	return answer(resp.StatusCode, body)
}

// answer decodes a tRPC answer.
func answer(status int, body []byte) (json.RawMessage, *wire.ErrorShape, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, nil, &Error{HTTPStatus: status, Code: CodeInvalidResponse,
			Message: fmt.Sprintf("undecodable response: %.200s", body), Retryable: status >= 500}
	}
	if env.Error != nil {
		if env.Error.Data.HTTPStatus == 0 {
			env.Error.Data.HTTPStatus = status
		}
		return nil, env.Error, nil
	}
	if env.Result == nil {
		return nil, nil, &Error{HTTPStatus: status, Code: CodeInvalidResponse, Message: "neither result nor error"}
	}
	return env.Result.Data, nil, nil
}

// Command posts kb.command. A rejection is a decision (rej set, err nil);
// err means the command was not decided or not allowed (see IsRetryable).
func (c *Client) Command(ctx context.Context, env kbcore.Envelope) (seq int64, rej *kbcore.Rejection, err error) {
	ack, rej, err := c.Submit(ctx, env)
	return ack.Seq, rej, err
}

// Ack is kb.command's answer for a committed command.
type Ack = wire.CommandResult

// Submit is Command with the whole acknowledgement (the duplicate flag
// too), for callers that check the wire.
func (c *Client) Submit(ctx context.Context, env kbcore.Envelope) (ack Ack, rej *kbcore.Rejection, err error) {
	body := encodeEnvelope(env)
	var data json.RawMessage
	var terr *wire.ErrorShape
	if c.h1 != nil {
		auth := ""
		if c.token != "" {
			auth = "Bearer " + c.token
		}
		status, resp, err := c.h1.post(ctx, "/trpc/"+wire.PathCommand, auth, body)
		if err != nil {
			return Ack{}, nil, err
		}
		if status == http.StatusOK {
			if seq, ok := plainAck(resp); ok {
				return Ack{Seq: seq}, nil, nil
			}
		}
		data, terr, err = answer(status, resp)
		if err != nil {
			return Ack{}, nil, err
		}
	} else {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/trpc/"+wire.PathCommand, bytes.NewReader(body))
		if err != nil {
			return Ack{}, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if data, terr, err = c.do(req); err != nil {
			return Ack{}, nil, err
		}
	}
	return commandAnswer(data, terr)
}

// commandAnswer is kb.command's answer from its data or its tRPC error.
func commandAnswer(data json.RawMessage, terr *wire.ErrorShape) (Ack, *kbcore.Rejection, error) {
	if terr != nil {
		if terr.Data.Code == "CONFLICT" && terr.Data.Rejection != nil {
			return Ack{}, terr.Data.Rejection, nil
		}
		return Ack{}, nil, &Error{HTTPStatus: terr.Data.HTTPStatus, Code: terr.Data.Code, Message: terr.Message, Retryable: terr.Data.Retryable}
	}
	if seq, ok := plainSeq(data); ok {
		return Ack{Seq: seq}, nil, nil
	}
	var out Ack
	if err := json.Unmarshal(data, &out); err != nil || out.Seq <= 0 {
		return Ack{}, nil, &Error{Code: CodeInvalidResponse, Message: fmt.Sprintf("kb.command data %.200s", data)}
	}
	return out, nil, nil
}

// Snapshot is kb.page's answer.
type Snapshot struct {
	Doc      kbcore.Doc
	Seq      int64
	Outcomes map[string]kbcore.Outcome
	// RawDoc is doc as the server wrote it (for checks of its encoding).
	RawDoc json.RawMessage
}

// Page gets kb.page with the outcomes of the pending ids.
func (c *Client) Page(ctx context.Context, pageID string, pending []string) (Snapshot, error) {
	if pending == nil {
		pending = []string{}
	}
	input, _ := json.Marshal(map[string]any{"page_id": pageID, "pending": pending})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/trpc/"+wire.PathPage+"?input="+url.QueryEscape(string(input)), nil)
	if err != nil {
		return Snapshot{}, err
	}
	data, terr, err := c.do(req)
	if err != nil {
		return Snapshot{}, err
	}
	if terr != nil {
		return Snapshot{}, &Error{HTTPStatus: terr.Data.HTTPStatus, Code: terr.Data.Code, Message: terr.Message, Retryable: terr.Data.Retryable}
	}
	var raw struct {
		Doc      json.RawMessage           `json:"doc"`
		Seq      int64                     `json:"seq"`
		Outcomes map[string]kbcore.Outcome `json:"outcomes"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Snapshot{}, &Error{Code: CodeInvalidResponse, Message: err.Error()}
	}
	d, err := kbcore.ParseDoc(raw.Doc)
	if err != nil {
		return Snapshot{}, &Error{Code: CodeInvalidResponse, Message: err.Error()}
	}
	return Snapshot{Doc: d, Seq: raw.Seq, Outcomes: raw.Outcomes, RawDoc: raw.Doc}, nil
}

// Event is one command of a page's log as the subscription delivers it.
// Events of one page decoded in this process may share their Payload
// bytes: do not modify them.
type Event struct {
	Seq int64          `json:"seq"`
	Cmd kbcore.Command `json:"cmd"`
	// TrackedID is the tracked event's result.id, what a tRPC client
	// resumes from (spec/PROTOCOL.md 4.4: the seq in decimal).
	TrackedID string `json:"-"`

	// shared is the page's entry for the event (share.go), if any.
	shared *sharedEvent
}

// ErrReconnect means the server asked clients to reconnect (shutdown).
var ErrReconnect = errors.New("client: server asked to reconnect")

// Subscription is a kb.onPage subscription on its own WebSocket.
type Subscription struct {
	conn   wsTransport
	cancel context.CancelFunc
	events chan Event
	err    error
	done   chan struct{}

	// the calls on the socket waiting for their replies (wscall.go)
	callMu   sync.Mutex
	calls    map[int64]chan callReply
	lastCall int64
	ended    bool

	page  string
	share *pageShare
	last  int64 // the seq of the last event delivered
	// deliver, if set, takes each event on the reader goroutine instead
	// of the events channel (a Window's subscription); false stops.
	deliver func(Event) bool
	buf     []byte // the message being read
}

// Subscribe opens a WebSocket and subscribes to pageID's commands with seq
// greater than after (0 = from the start).
func (c *Client) Subscribe(ctx context.Context, pageID string, after int64) (*Subscription, error) {
	return c.subscribe(ctx, pageID, after, nil)
}

func (c *Client) subscribe(ctx context.Context, pageID string, after int64, deliver func(Event) bool) (*Subscription, error) {
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	conn, err := dialWS(ctx, c.base, h, 64<<20)
	if err != nil {
		return nil, err
	}
	input := map[string]any{"page_id": pageID}
	if after > 0 {
		input["lastEventId"] = strconv.FormatInt(after, 10)
	}
	msg, _ := json.Marshal(map[string]any{"id": 1, "method": "subscription",
		"params": map[string]any{"path": wire.PathOnPage, "input": input}})
	if err := conn.write(ctx, msg); err != nil {
		conn.close("")
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	// A subscription that delivers (a Window's) never sends on events:
	// its channel is unbuffered, only to be closed, and holds no buffer
	// per window.
	events := make(chan Event)
	if deliver == nil {
		events = make(chan Event, 256)
	}
	s := &Subscription{conn: conn, cancel: cancel, events: events, done: make(chan struct{}),
		page: pageID, share: sharePage(pageID), last: after, deliver: deliver}
	go s.read(rctx)
	return s, nil
}

// readMessage reads the next message into s.buf (reused: the bytes are
// valid until the next read). The read is not tied to a context (with
// coder/websocket one costs a callback registration per message): Close
// ends it by closing the connection.
func (s *Subscription) readMessage() ([]byte, error) {
	b, err := s.conn.read(s.buf)
	if err != nil {
		return nil, err
	}
	if cap(b) <= 64<<10 {
		s.buf = b[:0]
	}
	return b, nil
}

func (s *Subscription) read(ctx context.Context) {
	defer close(s.done)
	defer close(s.events)
	defer releasePage(s.page, s.share)
	defer s.endCalls()
	if s.buf == nil {
		s.buf = make([]byte, 0, 1024)
	}
	for {
		b, err := s.readMessage()
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			s.err = err
			return
		}
		if string(b) == "PING" {
			_ = s.conn.write(ctx, []byte("PONG"))
			continue
		}
		if s.reply(b) {
			continue
		}
		var ev Event
		if e := s.share.lookup(s.last+1, b); e != nil {
			ev = e.ev // another subscription of the page decoded these bytes
		} else {
			raw := append([]byte(nil), b...)
			fast, ok := decodeEvent(raw)
			if !ok {
				var data bool
				if fast, data, err = s.decodeMessage(raw); err != nil || !data {
					if err != nil {
						s.err = err
						return
					}
					continue
				}
			}
			ev = s.share.store(fast, raw).ev
		}
		if ev.Seq > s.last {
			s.last = ev.Seq
		}
		if s.deliver != nil {
			if !s.deliver(ev) {
				s.err = ctx.Err()
				if s.err == nil {
					s.err = context.Canceled
				}
				return
			}
			continue
		}
		select {
		case s.events <- ev:
		case <-ctx.Done():
			s.err = ctx.Err()
			return
		}
	}
}

// decodeMessage is the reflective decoding of any message (decodeEvent
// takes the usual one): data reports an event; err ends the subscription
// (io.EOF when stopped, ErrReconnect, a tRPC error, a malformed message).
func (s *Subscription) decodeMessage(b []byte) (ev Event, data bool, err error) {
	// One pass decodes the message and its event (data is an Event for
	// type "data" and absent otherwise).
	var m struct {
		Method string `json:"method"`
		Result *struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Data *Event `json:"data"`
		} `json:"result"`
		Error *wire.ErrorShape `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Event{}, false, fmt.Errorf("client: bad message %.200s: %w", b, err)
	}
	switch {
	case m.Method == "reconnect":
		// Answer the server's close handshake now, as tRPC's client
		// does, so that its shutdown is not held up.
		s.conn.close("reconnecting")
		return Event{}, false, ErrReconnect
	case m.Error != nil:
		return Event{}, false, &Error{HTTPStatus: m.Error.Data.HTTPStatus, Code: m.Error.Data.Code, Message: m.Error.Message}
	case m.Result == nil:
		return Event{}, false, nil
	case m.Result.Type == "stopped":
		return Event{}, false, io.EOF
	case m.Result.Type != "data":
		return Event{}, false, nil
	}
	if m.Result.Data == nil {
		return Event{}, false, fmt.Errorf("client: an event without data: %.200s", b)
	}
	ev = *m.Result.Data
	ev.TrackedID = m.Result.ID
	return ev, true, nil
}

// Next returns the next event; after an error, the subscription is over
// and the caller resubscribes from its last seq.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	select {
	case ev, ok := <-s.events:
		if !ok {
			<-s.done
			if s.err == nil {
				s.err = io.EOF
			}
			return Event{}, s.err
		}
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Events is the channel of events; it closes when the subscription ends
// (then Err says why).
func (s *Subscription) Events() <-chan Event { return s.events }

// Err is why the subscription ended, once Events is closed.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close ends the subscription and its socket.
func (s *Subscription) Close() {
	s.cancel()
	s.conn.close("")
	<-s.done
}

// Device is the authenticated device, as kb.whoami answers.
type Device struct {
	WorkspaceID string `json:"workspace_id"`
	DeviceID    string `json:"device_id"`
	// Workspace is the workspace's name, when the server says it.
	Workspace string `json:"workspace,omitempty"`
}

// Whoami asks which device the token belongs to (kb.whoami).
func (c *Client) Whoami(ctx context.Context) (Device, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/trpc/"+wire.PathWhoami, nil)
	if err != nil {
		return Device{}, err
	}
	data, terr, err := c.do(req)
	if err != nil {
		return Device{}, err
	}
	if terr != nil {
		return Device{}, &Error{HTTPStatus: terr.Data.HTTPStatus, Code: terr.Data.Code, Message: terr.Message, Retryable: terr.Data.Retryable}
	}
	var d Device
	if err := json.Unmarshal(data, &d); err != nil || d.DeviceID == "" {
		return Device{}, &Error{Code: CodeInvalidResponse, Message: fmt.Sprintf("kb.whoami data %.200s", data)}
	}
	return d, nil
}

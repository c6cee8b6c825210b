package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/subspace/kbkit/kbcore"
)

// SuiteClient is the suite of a client adapter (spec/ADAPTER.md section
// 6): the adapter owns a real client, opens windows on a server with its
// own networking and performs user intents; `kbkit conformance run
// --client` drives it beside its own windows.
const SuiteClient = "client"

// Message types of the client suite.
const (
	TypeOpen   = "open"
	TypeIntent = "intent"
	TypeState  = "state"
	TypeClose  = "close"
)

// Intents a client may declare in init_ok: the command types the
// simulator draws for a window (node commands and page operations), and
// undo and redo. restore and restore-page are no intents: a window issues
// them when its user undoes a delete or a merge.
// They are the registry's intents (kbcore.TypeInfo.Intent).
var Intents = append(kbcore.TypesWhere(func(ti kbcore.TypeInfo) bool { return ti.Intent }), "undo", "redo")

// PageIntents are the intents among Intents that act on the page itself.
var PageIntents = kbcore.TypesWhere(func(ti kbcore.TypeInfo) bool { return ti.Intent && ti.Level == kbcore.PageLevel })

// OpenRequest opens a window of the client on a page.
type OpenRequest struct {
	Window   string `json:"window"`    // the window's name, chosen by the runner
	URL      string `json:"url"`       // the server (the kit's fault proxy)
	Token    string `json:"token"`     // the device's bearer token
	DeviceID string `json:"device_id"` // the device the token is of
	PageID   string `json:"page_id"`
	// TimeoutMS is how long the runner waits for open_ok (milliseconds):
	// a client that cannot get the page sooner answers error.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// IntentRequest is one user intent in a window: a command the user makes
// (Intent is its type; ID the command id the client MUST use; Payload its
// payload), or undo/redo with the ids of the commands it may issue.
type IntentRequest struct {
	Window  string          `json:"window"`
	Intent  string          `json:"intent"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	IDs     []string        `json:"ids,omitempty"`
}

// Toast is a message the client showed its user: a rejection's code, and
// the command's id when the rejection was of one.
type Toast struct {
	Code string `json:"code"`
	ID   string `json:"id,omitempty"`
}

// ClientState is a window's state as its client reports it.
type ClientState struct {
	Seq      int64           `json:"seq"`      // the seq of the server document
	Pending  []string        `json:"pending"`  // own commands not yet settled, in order
	Rendered json.RawMessage `json:"rendered"` // what the user sees (a document)
	// Server is the server document at Seq (optional).
	Server json.RawMessage `json:"server,omitempty"`
	// Toasts are the toasts shown since the previous report.
	Toasts   []Toast `json:"toasts"`
	Awaiting bool    `json:"awaiting,omitempty"` // a gap was seen, a snapshot is awaited
}

type windowRequest struct {
	Window string `json:"window"`
}

type stateReply struct {
	State *ClientState `json:"state"`
}

func (c *Client) stateCall(ctx context.Context, typ string, body any) (ClientState, error) {
	if !c.Info().Supports(SuiteClient) {
		return ClientState{}, fmt.Errorf("adapter: %s: the adapter does not list suite %q", typ, SuiteClient)
	}
	var r stateReply
	if err := c.call(ctx, typ, body, &r); err != nil {
		return ClientState{}, err
	}
	if r.State == nil {
		return ClientState{}, fmt.Errorf("%w: %s_ok has no state", ErrProtocol, typ)
	}
	if isNull(r.State.Rendered) {
		return ClientState{}, fmt.Errorf("%w: %s_ok: the state has no rendered document", ErrProtocol, typ)
	}
	return *r.State, nil
}

// Open sends `open`: the client fetches the page, subscribes to it and
// answers with the window's state.
func (c *Client) Open(ctx context.Context, req OpenRequest) (ClientState, error) {
	return c.stateCall(ctx, TypeOpen, req)
}

// Intent sends `intent`: the client applies it locally (and sends what it
// sends on its own) and answers with the window's state.
func (c *Client) Intent(ctx context.Context, req IntentRequest) (ClientState, error) {
	return c.stateCall(ctx, TypeIntent, req)
}

// State sends `state`.
func (c *Client) State(ctx context.Context, window string) (ClientState, error) {
	return c.stateCall(ctx, TypeState, windowRequest{Window: window})
}

// CloseWindow sends `close`: the client closes the window's sockets.
func (c *Client) CloseWindow(ctx context.Context, window string) error {
	var r struct{}
	return c.call(ctx, TypeClose, windowRequest{Window: window}, &r)
}

// SetTimeout changes the per-request timeout (a client may start slowly
// and still be held to a short timeout per request afterwards).
func (c *Client) SetTimeout(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.opts.Timeout = d
	}
}

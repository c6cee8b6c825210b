package wsrelay

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Event is a tracked data event:
// {"id":SUB,"result":{"type":"data","id":"SEQ","data":{"seq":SEQ,"cmd":CMD}}}.
type Event struct {
	Sub   json.RawMessage // the subscription's id
	Seq   int64
	Cmd   json.RawMessage // {id, type, payload} as logged
	CmdID string
	// Tracked overrides result.id (nil: the seq in decimal; "" leaves
	// result.id out).
	Tracked *string
}

func ParseEvent(b []byte) (Event, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			Type string          `json:"type"`
			ID   string          `json:"id"`
			Data json.RawMessage `json:"data"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &m) != nil || m.Result == nil || m.Result.Type != "data" || m.Result.ID == "" {
		return Event{}, false
	}
	var d struct {
		Seq int64           `json:"seq"`
		Cmd json.RawMessage `json:"cmd"`
	}
	if json.Unmarshal(m.Result.Data, &d) != nil || d.Seq <= 0 || len(d.Cmd) == 0 {
		return Event{}, false
	}
	var c struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(d.Cmd, &c)
	return Event{Sub: m.ID, Seq: d.Seq, Cmd: d.Cmd, CmdID: c.ID}, true
}

func (e Event) Encode() []byte {
	type data struct {
		Seq int64           `json:"seq"`
		Cmd json.RawMessage `json:"cmd"`
	}
	type result struct {
		Type string `json:"type"`
		ID   string `json:"id,omitempty"`
		Data data   `json:"data"`
	}
	id := strconv.FormatInt(e.Seq, 10)
	if e.Tracked != nil {
		id = *e.Tracked
	}
	b, _ := json.Marshal(struct {
		ID     json.RawMessage `json:"id"`
		Result result          `json:"result"`
	}{e.Sub, result{"data", id, data{e.Seq, e.Cmd}}})
	return b
}

// FlushAfter is how long a stream may hold events back while the server
// sends nothing.
const FlushAfter = 100 * time.Millisecond

// RelayUp relays a proxied socket's client messages to the server, each
// text message through hook (nil: as it is), until either side fails;
// then it cancels the socket's context.
func RelayUp(ctx context.Context, cancel func(), down, up *websocket.Conn, hook func([]byte) []byte) {
	defer cancel()
	for {
		typ, b, err := down.Read(ctx)
		if err != nil {
			return
		}
		if hook != nil && typ == websocket.MessageText {
			b = hook(b)
		}
		if up.Write(ctx, typ, b) != nil {
			return
		}
	}
}

// ServerMessages reads a proxied socket's server messages into a channel,
// closed when a read fails or ctx ends.
func ServerMessages(ctx context.Context, up *websocket.Conn) <-chan []byte {
	msgs := make(chan []byte)
	go func() {
		defer close(msgs)
		for {
			_, b, err := up.Read(ctx)
			if err != nil {
				return
			}
			select {
			case msgs <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	return msgs
}

// Pair opens the two sockets of a proxied /trpc WebSocket: it dials
// upstream (an instance's http URL) at r's path and query with r's
// Authorization, then accepts r. When the instance refuses, r is answered
// with its status (502 when it did not answer); ok is false then and the
// caller returns.
func Pair(ctx context.Context, w http.ResponseWriter, r *http.Request, upstream url.URL) (down, up *websocket.Conn, ok bool) {
	u := upstream
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path, u.RawQuery = r.URL.Path, r.URL.RawQuery
	h := http.Header{}
	if a := r.Header.Get("Authorization"); a != "" {
		h.Set("Authorization", a)
	}
	up, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		status := http.StatusBadGateway
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			status = resp.StatusCode // e.g. 401 or 503: the instance's refusal
		}
		http.Error(w, "proxy: "+err.Error(), status)
		return nil, nil, false
	}
	down, err = websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		up.CloseNow()
		return nil, nil, false
	}
	return down, up, true
}

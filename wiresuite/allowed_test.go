package wiresuite

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/subspace/kbkit/server"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
)

// Servers that behave as the spec allows, though not as the reference
// server does: each check that once failed such a server passes it.

// startRated is start with a per-device rate limit.
func startRated(t *testing.T, wrap func(http.Handler) http.Handler, limits server.Limits, rl server.RateLimit) *Env {
	env, _ := startEmbedded(t, sim.EmbeddedOptions{Instances: 1, Wrap: wrap, Limits: limits, RateLimit: rl})
	return env
}

// startEmbedded runs the reference server with opts and returns an Env
// with one device of it, preflighted, and the server.
func startEmbedded(t *testing.T, opts sim.EmbeddedOptions) (*Env, *sim.Embedded) {
	t.Helper()
	ctx := context.Background()
	e, err := sim.NewEmbedded(ctx, pgprovider.ForTest(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tok, err := e.Devices(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{BaseURL: e.Endpoints()[0], Token: tok[0]}
	if err := env.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	return env, e
}

// A rate limit advertised in kb.limits (with its burst): the subscription
// cap check paces itself by it, so the TOO_MANY_REQUESTS it meets is the
// cap's. Without pacing, the 61st subscription of a burst of 60 is refused
// by the rate limit, inside the cap.
func TestAllowedRateLimit(t *testing.T) {
	limits := testLimits
	limits.MaxSubscriptionsPerSocket, limits.MaxSubscriptionsPerDevice = 60, 90
	env := startRated(t, nil, limits, server.RateLimit{PerSecond: 150, Burst: 60})
	results := runHostile(t, env, "hostile-limits", "hostile-subscription-cap", "whoami")
	expectFailures(t, results, nil, []string{"protocol/hostile-limits", "protocol/hostile-subscription-cap", "protocol/whoami"})
}

// HTTP keep-alive off (every answer says Connection: close, HTTP/1.1
// allows it): the connection cap check counts only the connections that
// are really open, and still finds the cap; the idle check has no idle
// connection to wait on.
func TestAllowedConnectionClose(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") == "" {
				w.Header().Set("Connection", "close")
			}
			h.ServeHTTP(w, r)
		})
	})
	results := runHostile(t, env, "hostile-connection-cap", "hostile-idle-keepalive", "whoami")
	expectFailures(t, results, nil, []string{"protocol/hostile-connection-cap", "protocol/hostile-idle-keepalive", "protocol/whoami"})
}

// wsFront serves env's server through a WebSocket front whose messages to
// the client pass through toClient (which sends them, held or changed, with
// send) and to the server through toServer (nil: as they are; toServer
// returning nil holds the message back); HTTP
// passes through. It returns the front's base URL.
func wsFront(t *testing.T, env *Env, toClient func(send func([]byte), b []byte), toServer func([]byte) []byte) string {
	t.Helper()
	return wsFrontPerConn(t, env, func() (func(func([]byte), []byte), func([]byte) []byte) { return toClient, toServer })
}

// wsFrontPerConn is wsFront with a pair of filters per connection.
func wsFrontPerConn(t *testing.T, env *Env, perConn func() (toClient func(send func([]byte), b []byte), toServer func([]byte) []byte)) string {
	t.Helper()
	up, _ := url.Parse(env.BaseURL)
	rp := httputil.NewSingleHostReverseProxy(up)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			rp.ServeHTTP(w, r)
			return
		}
		client, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer client.CloseNow()
		toClient, toServer := perConn()
		h := http.Header{}
		if a := r.Header.Get("Authorization"); a != "" {
			h.Set("Authorization", a)
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		srv, _, err := websocket.Dial(ctx, "ws://"+up.Host+r.URL.RequestURI(), &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			_ = client.Close(websocket.StatusInternalError, "upstream")
			return
		}
		defer srv.CloseNow()
		client.SetReadLimit(64 << 20)
		srv.SetReadLimit(64 << 20)
		go func() {
			defer cancel()
			send := func(b []byte) { _ = client.Write(ctx, websocket.MessageText, b) }
			for {
				_, b, err := srv.Read(ctx)
				if err != nil {
					_ = client.Close(websocket.CloseStatus(err), "")
					return
				}
				toClient(send, b)
			}
		}()
		for {
			typ, b, err := client.Read(ctx)
			if err != nil {
				return
			}
			if toServer != nil && typ == websocket.MessageText {
				if b = toServer(b); b == nil {
					continue // held or answered by the front
				}
			}
			if srv.Write(ctx, typ, b) != nil {
				return
			}
		}
	}))
	t.Cleanup(front.Close)
	return front.URL
}

// Replies to a message array in reverse order (PROTOCOL.md 5.1 lets a
// server answer in any order): protocol/ws-message-batch passes; and a
// server that also handles the array's commands in reverse fails it.
func TestAllowedRepliesInAnyOrder(t *testing.T) {
	reverse := func(send func([]byte), held *[][]byte, b []byte) {
		switch id := string(idOf(b)); id {
		case "1", "2":
			*held = append(*held, b)
		case "3":
			send(b)
			for i := len(*held) - 1; i >= 0; i-- {
				send((*held)[i])
			}
			*held = nil
		default:
			send(b)
		}
	}
	env := start(t, nil)
	var mu sync.Mutex
	var held [][]byte
	env.BaseURL = wsFront(t, env, func(send func([]byte), b []byte) {
		mu.Lock()
		defer mu.Unlock()
		reverse(send, &held, b)
	}, nil)
	results := runHostile(t, env, "ws-message-batch", "ws-ping")
	expectFailures(t, results, nil, []string{"protocol/ws-message-batch", "protocol/ws-ping"})

	// Broken: the array's messages handled last to first.
	broken := start(t, nil)
	broken.BaseURL = wsFront(t, broken, func(send func([]byte), b []byte) { send(b) }, reverseArrays)
	results = runHostile(t, broken, "ws-message-batch", "ws-ping")
	expectFailures(t, results, []string{"protocol/ws-message-batch"}, []string{"protocol/ws-ping"})
	if r := results["protocol/ws-message-batch"]; !strings.Contains(r.Message, "array order") {
		t.Errorf("the failure does not say what was checked: %s", describe(r))
	}
}

// idOf is a server message's id, as raw JSON.
func idOf(b []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(b, &m)
	return m.ID
}

// reverseArrays reverses every message array the client sends, so the
// server handles its messages last to first.
func reverseArrays(b []byte) []byte {
	var arr []json.RawMessage
	if json.Unmarshal(b, &arr) == nil && len(arr) > 1 {
		slices.Reverse(arr)
		b, _ = json.Marshal(arr)
	}
	return b
}

// Bytes the spec does not fix (README.md 1: only documents and events are
// canonical): white space in the answers' envelopes and HTML escaping in
// error answers. The checks compare those by value and pass.
func TestAllowedEnvelopeBytes(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return rewrite(h, func(_ *http.Request, status int, body []byte) (int, []byte) {
			if status >= 400 {
				return status, []byte(htmlEscaping.Replace(string(body)))
			}
			return status, bytes.Replace(body, []byte(`{"result":{"data":`), []byte("{ \"result\" : {\"data\" :\n"), 1)
		})
	})
	ids := []string{"page-snapshot", "command-set-outputs", "page-outcomes", "rejection", "hostile-id-reused", "whoami", "command-seq"}
	results := runHostile(t, env, ids...)
	var pass []string
	for _, id := range ids {
		pass = append(pass, "protocol/"+id)
	}
	expectFailures(t, results, nil, pass)
}

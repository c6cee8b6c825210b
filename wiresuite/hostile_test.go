package wiresuite

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/subspace/kbkit/server"
)

// Each hostile check fails on a server that behaves as the reference
// server once did (a broken variant), and passes on today's.

// commandFilter sees the body of every non-batch POST to path: it answers
// it itself (true) or lets next answer, and may look at next's answer.
func commandFilter(next http.Handler, path string, before func(w http.ResponseWriter, body []byte) bool,
	after func(body []byte, status int, answer []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/trpc/"+path || r.URL.Query().Get("batch") != "" {
			next.ServeHTTP(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		if before != nil && before(w, b) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if after != nil {
			after(b, rec.Code, rec.Body.Bytes())
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

const internalError = `{"error":{"message":"internal error","code":-32603,"data":{"code":"INTERNAL_SERVER_ERROR","httpStatus":500,"path":"kb.command"}}}`

func runHostile(t *testing.T, env *Env, ids ...string) map[string]Result {
	t.Helper()
	return run(t, env, `^protocol/(`+strings.Join(ids, "|")+`)$`)
}

// Dedup by the id alone, before the workspace is looked at: the first
// answer to an id is the answer to every later command with that id.
func TestBrokenGlobalDedup(t *testing.T) {
	var mu sync.Mutex
	first := map[string][]byte{}
	idOf := func(b []byte) string {
		var e struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(b, &e)
		return e.ID
	}
	env := start(t, func(h http.Handler) http.Handler {
		return commandFilter(h, "kb.command", func(w http.ResponseWriter, b []byte) bool {
			mu.Lock()
			prev, ok := first[idOf(b)]
			mu.Unlock()
			if !ok {
				return false
			}
			if bytes.Contains(prev, []byte(`"seq"`)) && !bytes.Contains(prev, []byte(`duplicate`)) {
				writeJSON(w, http.StatusOK, string(bytes.Replace(prev, []byte(`}}}`), []byte(`,"duplicate":true}}}`), 1)))
			} else if bytes.Contains(prev, []byte(`"seq"`)) {
				writeJSON(w, http.StatusOK, string(prev))
			} else {
				writeJSON(w, http.StatusConflict, string(prev))
			}
			return true
		}, func(b []byte, status int, answer []byte) {
			if status == http.StatusOK || status == http.StatusConflict {
				mu.Lock()
				if _, ok := first[idOf(b)]; !ok {
					first[idOf(b)] = answer
				}
				mu.Unlock()
			}
		})
	})
	results := runHostile(t, env, "hostile-id-other-workspace", "hostile-id-reused", "retry-committed", "command-seq")
	expectFailures(t, results,
		[]string{"protocol/hostile-id-other-workspace", "protocol/hostile-id-reused"},
		[]string{"protocol/retry-committed", "protocol/command-seq"})
}

// Text the database cannot hold reaches it and comes back as a 500, which
// clients retry forever.
func TestBrokenPoisonAnswered500(t *testing.T) {
	poisoned := regexp.MustCompile(`\\u0000|\\u[dD][89abAB][0-9a-fA-F]{2}|\\u[dD][c-fC-F][0-9a-fA-F]{2}`)
	env := start(t, func(h http.Handler) http.Handler {
		return commandFilter(h, "kb.command", func(w http.ResponseWriter, b []byte) bool {
			if !utf8.Valid(b) || poisoned.Match(b) {
				writeJSON(w, http.StatusInternalServerError, internalError)
				return true
			}
			return false
		}, nil)
	})
	results := runHostile(t, env, "hostile-poison-text", "parse-error", "command-seq")
	expectFailures(t, results, []string{"protocol/hostile-poison-text"}, []string{"protocol/parse-error", "protocol/command-seq"})
}

// A btree index on whole titles and links: a long incompressible one
// fails in the database (54000) and is answered 500.
func TestBrokenLongTextIndex(t *testing.T) {
	long := func(b []byte) bool { // a JSON string of more than 2,600 bytes
		for _, part := range bytes.Split(b, []byte(`"`)) {
			if len(part) > 2600 {
				return true
			}
		}
		return false
	}
	env := start(t, func(h http.Handler) http.Handler {
		return commandFilter(h, "kb.command", func(w http.ResponseWriter, b []byte) bool {
			if long(b) {
				writeJSON(w, http.StatusInternalServerError, internalError)
				return true
			}
			return false
		}, nil)
	})
	results := runHostile(t, env, "hostile-long-text", "command-seq")
	expectFailures(t, results, []string{"protocol/hostile-long-text"}, []string{"protocol/command-seq"})
}

// advertise rewrites kb.limits' answer to claim the limits l, whatever
// the server enforces.
func advertise(next http.Handler, l server.Limits) http.Handler {
	return claimLimits(next, map[string]any{
		"body_timeout_ms":              l.BodyTimeout.Milliseconds(),
		"params_timeout_ms":            l.ParamsTimeout.Milliseconds(),
		"max_connections":              l.MaxConnections,
		"max_subscriptions_per_socket": l.MaxSubscriptionsPerSocket,
		"max_subscriptions_per_device": l.MaxSubscriptionsPerDevice,
		"max_batch":                    l.MaxBatch,
		"auth_failures_per_minute":     l.AuthFailures,
	})
}

// claimLimits rewrites kb.limits' answer to claim fields (a nil value
// takes the field out), whatever the server enforces.
func claimLimits(next http.Handler, fields map[string]any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/trpc/kb.limits" || r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var top struct {
			Result struct {
				Data map[string]any `json:"data"`
			} `json:"result"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &top); err != nil || top.Result.Data == nil {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		for k, v := range fields {
			if v == nil {
				delete(top.Result.Data, k)
			} else {
				top.Result.Data[k] = v
			}
		}
		b, _ := json.Marshal(top)
		writeJSON(w, http.StatusOK, string(b))
	})
}

// No timeouts and no caps (the old defaults), behind a kb.limits that
// claims them: every check that exercises a limit fails; and with the
// honest kb.limits (zeros), protocol/hostile-limits fails.
func TestBrokenNoLimits(t *testing.T) {
	off := server.Limits{BodyTimeout: -1, ParamsTimeout: -1, MaxConnections: -1, MaxSubscriptionsPerSocket: -1,
		MaxBatch: -1, AuthFailures: -1}
	t.Run("claimed", func(t *testing.T) {
		env := startWith(t, func(h http.Handler) http.Handler { return advertise(h, testLimits) }, off)
		results := runHostile(t, env, "hostile-limits", "hostile-slow-body", "hostile-silent-websocket", "hostile-subscription-cap",
			"hostile-batch-cap", "hostile-connection-cap", "hostile-unknown-tokens", "whoami")
		expectFailures(t, results,
			[]string{"protocol/hostile-slow-body", "protocol/hostile-silent-websocket", "protocol/hostile-subscription-cap",
				"protocol/hostile-batch-cap", "protocol/hostile-connection-cap", "protocol/hostile-unknown-tokens"},
			[]string{"protocol/hostile-limits", "protocol/whoami"})
	})
	t.Run("device cap only", func(t *testing.T) {
		limits := testLimits
		limits.MaxSubscriptionsPerDevice = -1
		env := startWith(t, func(h http.Handler) http.Handler { return advertise(h, testLimits) }, limits)
		results := runHostile(t, env, "hostile-subscription-cap", "whoami")
		expectFailures(t, results, []string{"protocol/hostile-subscription-cap"}, []string{"protocol/whoami"})
		if r := results["protocol/hostile-subscription-cap"]; !strings.Contains(r.Message, "max_subscriptions_per_device") {
			t.Errorf("the failure is not the device cap's: %s", r.Message)
		}
	})
	t.Run("honest", func(t *testing.T) {
		env := startWith(t, nil, off)
		results := runHostile(t, env, "hostile-limits", "whoami")
		expectFailures(t, results, []string{"protocol/hostile-limits"}, []string{"protocol/whoami"})
	})
}

// A revocation that only deletes nothing: kb.revoke answers, the device
// goes on working.
func TestBrokenRevokeIgnored(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return commandFilter(h, "kb.revoke", func(w http.ResponseWriter, _ []byte) bool {
			writeJSON(w, http.StatusOK, `{"result":{"data":{}}}`)
			return true
		}, nil)
	})
	results := runHostile(t, env, "hostile-revoke", "whoami")
	expectFailures(t, results, []string{"protocol/hostile-revoke"}, []string{"protocol/whoami"})
}

// A WebSocket front that accepts binary frames, turns invalid UTF-8 into
// a parse error and never answers a stop of an id it did not open: the
// old server's frame handling.
func TestBrokenWSFrames(t *testing.T) {
	env := start(t, nil)
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
		u := "ws://" + up.Host + r.URL.RequestURI()
		h := http.Header{}
		if a := r.Header.Get("Authorization"); a != "" {
			h.Set("Authorization", a)
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		srv, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			_ = client.Close(websocket.StatusInternalError, "upstream")
			return
		}
		defer srv.CloseNow()
		client.SetReadLimit(64 << 20)
		srv.SetReadLimit(64 << 20)
		go func() {
			defer cancel()
			for {
				typ, b, err := srv.Read(ctx)
				if err != nil {
					_ = client.Close(websocket.CloseStatus(err), "")
					return
				}
				if client.Write(ctx, typ, b) != nil {
					return
				}
			}
		}()
		for {
			_, b, err := client.Read(ctx)
			if err != nil {
				return
			}
			if !utf8.Valid(b) {
				b = []byte("{not json")
			}
			var m struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(b, &m) == nil && m.Method == "subscription.stop" {
				continue // never answered
			}
			if srv.Write(ctx, websocket.MessageText, b) != nil {
				return
			}
		}
	}))
	defer front.Close()
	env.BaseURL = front.URL
	env.EventTimeout = 3 * time.Second
	results := runHostile(t, env, "hostile-ws-binary", "hostile-ws-invalid-utf8", "hostile-ws-stop-unknown", "ws-ping")
	expectFailures(t, results, []string{"protocol/hostile-ws-binary", "protocol/hostile-ws-invalid-utf8", "protocol/hostile-ws-stop-unknown"},
		[]string{"protocol/ws-ping"})
}

package wiresuite

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subspace/kbkit/sim"
)

// Each check of checks_certify.go fails against a server broken the way
// an independent server once was, and passes the reference server
// (TestReferenceServerPasses).

// Dedup by (page, id) alone: another device's command with a decided id
// on the same page gets the first use's outcome, and vanishes.
func TestBrokenDedupIgnoresDevice(t *testing.T) {
	var mu sync.Mutex
	first := map[string][]byte{}
	type env struct {
		ID       string `json:"id"`
		DeviceID string `json:"device_id"`
		PageID   string `json:"page_id"`
	}
	parse := func(b []byte) env {
		var e env
		_ = json.Unmarshal(b, &e)
		return e
	}
	e := start(t, func(h http.Handler) http.Handler {
		return commandFilter(h, "kb.command", func(w http.ResponseWriter, b []byte) bool {
			c := parse(b)
			mu.Lock()
			prev, ok := first[c.PageID+c.ID]
			mu.Unlock()
			if !ok || bytes.Contains(prev, []byte(c.DeviceID)) {
				return false // the same device's retry: the server answers
			}
			answer := prev[bytes.IndexByte(prev, '\n')+1:]
			if bytes.Contains(answer, []byte(`"seq"`)) {
				writeJSON(w, http.StatusOK, string(bytes.Replace(bytes.Replace(answer, []byte(`,"duplicate":true`), nil, 1), []byte(`}}}`), []byte(`,"duplicate":true}}}`), 1)))
			} else {
				writeJSON(w, http.StatusConflict, string(answer))
			}
			return true
		}, func(b []byte, status int, answer []byte) {
			c := parse(b)
			if status == http.StatusOK || status == http.StatusConflict {
				mu.Lock()
				if _, ok := first[c.PageID+c.ID]; !ok {
					first[c.PageID+c.ID] = append([]byte(c.DeviceID+"\n"), answer...)
				}
				mu.Unlock()
			}
		})
	})
	results := runHostile(t, e, "hostile-id-other-device", "hostile-id-reused", "retry-committed", "rejection-retry")
	expectFailures(t, results, []string{"protocol/hostile-id-other-device"},
		[]string{"protocol/hostile-id-reused", "protocol/retry-committed", "protocol/rejection-retry"})

	// Without --token2 the check is skipped, and --strict fails it.
	e.Token2 = ""
	strict := Run(t.Context(), e, Select(Checks(), regexp.MustCompile(`^protocol/hostile-id-other-device$`)), Options{Strict: true})
	if len(strict) != 1 || strict[0].Status != Fail || !strings.Contains(strict[0].Message, "--token2") {
		t.Errorf("strict without --token2: %+v", strict)
	}
}

// eventsOf calls edit on the data of every tracked event of a message.
func eventsOf(b []byte, edit func(data []byte) []byte) []byte {
	i := bytes.Index(b, []byte(`"data":{"cmd":`))
	if i < 0 || !bytes.HasSuffix(b, []byte("}}")) {
		return b
	}
	data := b[i+len(`"data":`) : len(b)-2]
	out := append([]byte{}, b[:i+len(`"data":`)]...)
	out = append(out, edit(data)...)
	return append(out, "}}"...)
}

// oldLayout writes an event's data as encoding/json did: {"seq", "cmd":
// {"id", "type", "payload"}}, HTML characters escaped.
func oldLayout(data []byte) []byte {
	var d struct {
		Cmd struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		} `json:"cmd"`
		Seq int64 `json:"seq"`
	}
	if json.Unmarshal(data, &d) != nil {
		return data
	}
	b, _ := json.Marshal(struct {
		Seq int64 `json:"seq"`
		Cmd any   `json:"cmd"`
	}{d.Seq, d.Cmd})
	return b
}

// Events in encoding/json's layout (live and replayed alike), and events
// that are canonical live but HTML-escaped when replayed to a later
// subscriber of the page.
func TestBrokenEventBytes(t *testing.T) {
	t.Run("not canonical", func(t *testing.T) {
		env := start(t, nil)
		env.BaseURL = wsFront(t, env, func(send func([]byte), b []byte) { send(eventsOf(b, oldLayout)) }, nil)
		results := runHostile(t, env, "ws-event-bytes", "ws-ping")
		expectFailures(t, results, []string{"protocol/ws-event-bytes"}, []string{"protocol/ws-ping"})
		if r := results["protocol/ws-event-bytes"]; !strings.Contains(r.Message, "canonical JSON") {
			t.Errorf("the failure does not say what was checked: %s", describe(r))
		}
	})
	t.Run("replay differs", func(t *testing.T) {
		env := start(t, nil)
		var mu sync.Mutex
		subscribers := map[string]int{} // page -> sockets that subscribed to it
		env.BaseURL = wsFrontPerConn(t, env, func() (func(func([]byte), []byte), func([]byte) []byte) {
			later := false
			toServer := func(b []byte) []byte {
				var m struct {
					Params struct {
						Path  string `json:"path"`
						Input struct {
							PageID string `json:"page_id"`
						} `json:"input"`
					} `json:"params"`
				}
				if json.Unmarshal(b, &m) == nil && m.Params.Path == "kb.onPage" {
					mu.Lock()
					subscribers[m.Params.Input.PageID]++
					later = subscribers[m.Params.Input.PageID] > 1
					mu.Unlock()
				}
				return b
			}
			toClient := func(send func([]byte), b []byte) {
				mu.Lock()
				l := later
				mu.Unlock()
				if l {
					b = eventsOf(b, func(d []byte) []byte { return []byte(htmlEscaping.Replace(string(d))) })
				}
				send(b)
			}
			return toClient, toServer
		})
		results := runHostile(t, env, "ws-event-bytes", "ws-ping")
		expectFailures(t, results, []string{"protocol/ws-event-bytes"}, []string{"protocol/ws-ping"})
		if r := results["protocol/ws-event-bytes"]; !strings.Contains(r.Message, "same bytes live and replayed") {
			t.Errorf("the failure does not say what was checked: %s", describe(r))
		}
	})
}

// Directory invalidations for create-page only (seq 1), and a topic list
// whose unknown topics are dropped instead of refused.
func TestBrokenInvalidations(t *testing.T) {
	env := start(t, nil)
	env.BaseURL = wsFront(t, env, func(send func([]byte), b []byte) {
		if bytes.Contains(b, []byte(`"topic":"directory"`)) && !bytes.Contains(b, []byte(`"seq":1}`)) && !bytes.Contains(b, []byte(`"page_id":""`)) {
			return // only create-page's invalidation goes out
		}
		send(b)
	}, func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(`,"no-such-topic"`), nil)
	})
	results := runHostile(t, env, "ws-invalidate-directory", "ws-invalidate-unknown-topic", "ws-invalidate", "ws-ping")
	expectFailures(t, results, []string{"protocol/ws-invalidate-directory", "protocol/ws-invalidate-unknown-topic"},
		[]string{"protocol/ws-invalidate", "protocol/ws-ping"})
	if r := results["protocol/ws-invalidate-directory"]; !strings.Contains(r.Message, "rename-page") {
		t.Errorf("the failure does not name the command: %s", describe(r))
	}
}

// kb.page serving any number of pending ids (a front that drops those
// past the limit before the server sees them).
func TestBrokenMaxPending(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/trpc/kb.page" && r.URL.Query().Get("batch") == "" {
				var in map[string]any
				if json.Unmarshal([]byte(r.URL.Query().Get("input")), &in) == nil {
					if p, ok := in["pending"].([]any); ok && len(p) > 1000 {
						in["pending"] = p[:1000]
						b, _ := json.Marshal(in)
						r.URL.RawQuery = "input=" + url.QueryEscape(string(b))
					}
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	results := runHostile(t, env, "hostile-max-pending", "page-outcomes")
	expectFailures(t, results, []string{"protocol/hostile-max-pending"}, []string{"protocol/page-outcomes"})
}

// tcpFront relays env's server through a TCP proxy that passes what the
// server sends through edit (per chunk read); it returns the front's base
// URL. Every connection it accepted is closed with the test.
func tcpFront(t *testing.T, env *Env, edit func([]byte) []byte) string {
	t.Helper()
	up, _ := url.Parse(env.BaseURL)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", up.Host)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, s)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(s, c); s.Close() }()
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						if _, werr := c.Write(edit(buf[:n])); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// The connection cap's 503 without Retry-After.
func TestBrokenConnectionCapNoRetryAfter(t *testing.T) {
	env := start(t, nil)
	env.BaseURL = tcpFront(t, env, func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte("Retry-After: 1\r\n"), nil)
	})
	results := runHostile(t, env, "hostile-connection-cap", "whoami")
	expectFailures(t, results, []string{"protocol/hostile-connection-cap"}, []string{"protocol/whoami"})
	if r := results["protocol/hostile-connection-cap"]; !strings.Contains(r.Message, "Retry-After") {
		t.Errorf("the failure does not say what was checked: %s", describe(r))
	}
}

// PING answered only once every call before it is answered (a front that
// holds it back), and a server that advertises an idle timeout it does not
// enforce.
func TestBrokenPingAndIdle(t *testing.T) {
	t.Run("ping queued", func(t *testing.T) {
		env := start(t, nil)
		env.BaseURL = wsFrontPerConn(t, env, func() (func(func([]byte), []byte), func([]byte) []byte) {
			var mu sync.Mutex
			outstanding, held := 0, false
			toServer := func(b []byte) []byte {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case string(b) == "PING" && outstanding > 0:
					held = true
					return nil
				case bytes.Contains(b, []byte(`"method":"query"`)) || bytes.Contains(b, []byte(`"method":"mutation"`)):
					outstanding++
				}
				return b
			}
			toClient := func(send func([]byte), b []byte) {
				send(b)
				mu.Lock()
				defer mu.Unlock()
				if bytes.Contains(b, []byte(`"result":{"type":"data","data"`)) || bytes.Contains(b, []byte(`"error"`)) {
					outstanding--
				}
				if held && outstanding <= 0 {
					held = false
					send([]byte("PONG"))
				}
			}
			return toClient, toServer
		})
		results := runHostile(t, env, "ws-ping-jumps-queue", "ws-ping")
		expectFailures(t, results, []string{"protocol/ws-ping-jumps-queue"}, []string{"protocol/ws-ping"})
	})
	t.Run("idle never closed", func(t *testing.T) {
		limits := testLimits
		limits.IdleTimeout = -1
		env := startWith(t, func(h http.Handler) http.Handler {
			return rewrite(h, func(r *http.Request, status int, body []byte) (int, []byte) {
				if r.URL.Path == "/trpc/kb.limits" {
					return status, bytes.Replace(body, []byte(`"idle_timeout_ms":0`), []byte(`"idle_timeout_ms":2000`), 1)
				}
				return status, body
			})
		}, limits)
		results := runHostile(t, env, "hostile-idle-keepalive", "whoami")
		expectFailures(t, results, []string{"protocol/hostile-idle-keepalive"}, []string{"protocol/whoami"})
	})
}

// A socket queue advertised smaller than the one enforced (from outside,
// a queue that is not bounded at the advertised size): four times it
// pipelined are all served.
func TestBrokenSocketQueue(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return rewrite(h, func(r *http.Request, status int, body []byte) (int, []byte) {
			if r.URL.Path == "/trpc/kb.limits" {
				return status, bytes.Replace(body, []byte(`"max_socket_queue":64`), []byte(`"max_socket_queue":8`), 1)
			}
			return status, body
		})
	})
	results := runHostile(t, env, "hostile-socket-queue", "ws-ping")
	expectFailures(t, results, []string{"protocol/hostile-socket-queue"}, []string{"protocol/ws-ping"})
}

// A write timeout advertised shorter than the one enforced (from outside,
// a client that does not read is held longer than kb.limits says): the
// server holds it 60 s, kb.limits says 1 s.
func TestBrokenWriteTimeout(t *testing.T) {
	env, _ := startEmbedded(t, sim.EmbeddedOptions{Instances: 1, Limits: testLimits, WriteTimeout: time.Minute,
		Wrap: func(h http.Handler) http.Handler {
			return rewrite(h, func(r *http.Request, status int, body []byte) (int, []byte) {
				if r.URL.Path == "/trpc/kb.limits" {
					return status, bytes.Replace(body, []byte(`"write_timeout_ms":60000`), []byte(`"write_timeout_ms":1000`), 1)
				}
				return status, body
			})
		}})
	results := runHostile(t, env, "hostile-write-timeout", "ws-ping")
	expectFailures(t, results, []string{"protocol/hostile-write-timeout"}, []string{"protocol/ws-ping"})
}

// A server whose connection cap keeps the places of closed connections:
// past the cap it refuses every new connection (here: any new address
// asking /healthz once five have), also after the held ones close.
func TestBrokenConnectionCapNeverFreed(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	env := start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				mu.Lock()
				full := !seen[r.RemoteAddr] && len(seen) >= 5
				if !full {
					seen[r.RemoteAddr] = true
				}
				mu.Unlock()
				if full {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	results := runHostile(t, env, "hostile-connection-cap")
	expectFailures(t, results, []string{"protocol/hostile-connection-cap"}, nil)
	if r := results["protocol/hostile-connection-cap"]; !strings.Contains(r.Message, "held at once were served") {
		t.Errorf("the failure does not say what was checked: %s", describe(r))
	}
}

package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/subspace/kbkit/kbcore"
)

// clientProxy is the fault proxy in front of one foreign window
// (foreign.go): the only address its client is given. It forwards HTTP
// and the /trpc WebSocket to one instance of the target and injects the
// seed's faults into the client's real sockets: answers to kb.command and
// kb.page lost (the connection is cut after the server decided), echoes
// dropped, duplicated and reordered, sockets cut. It records every call,
// answer, subscription and event it passes, which is the foreign
// window's history for the checkers; the simulator drains the records
// between steps (the proxy's goroutines never touch the sim).
type clientProxy struct {
	target    Target
	inst      int
	start     time.Time
	srv       *httptest.Server
	transport *http.Transport
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	mu     sync.Mutex
	rng    *mrand.Rand
	faults Faults
	quiet  bool // quiesce: no more faults
	recs   []proxyRec
	socks  map[*websocket.Conn]bool
	adv    proxyArms // what the kit, as another user, armed (clientproxy_arms.go)
}

// What a proxy record is.
const (
	recPost      = "post"      // a kb.command call arrived (env)
	recAnswer    = "answer"    // its answer (seq/dup, rej, or err: undecided); lost: not delivered
	recPage      = "page"      // a kb.page call arrived (page, pending)
	recSnapshot  = "snapshot"  // its answer (seq; err when none)
	recSubscribe = "subscribe" // a kb.onPage subscription (page, after, hasAfter)
	recDeliver   = "deliver"   // an event written to the client (page, seq, cmdID)
	recDrop      = "drop"      // an event dropped (fault)
	recDup       = "dup"       // an event written twice (fault)
	recReorder   = "reorder"   // two events swapped (fault)
	recCut       = "cut"       // the client's sockets cut (fault)
)

type proxyRec struct {
	kind     string
	at       int64 // ns since the seed began
	env      kbcore.Envelope
	id       string
	seq      int64
	dup      bool
	rej      *kbcore.Rejection
	err      string
	lost     bool
	refused  bool // a kb.command answered 400 by the proxy (armRefuse): final, never forwarded
	page     string
	pending  []string
	after    int64
	hasAfter bool
	cmdID    string
	// A kb.page answer's outcomes, and when its request arrived.
	outcomes map[string]kbcore.Outcome
	reqAt    int64
}

func newClientProxy(t Target, inst int, start time.Time, seed int64, k int, faults Faults) *clientProxy {
	p := &clientProxy{target: t, inst: inst, start: start, faults: faults,
		rng:       mrand.New(mrand.NewPCG(uint64(seed), 0x70726f7879+uint64(k))),
		transport: http.DefaultTransport.(*http.Transport).Clone(), socks: map[*websocket.Conn]bool{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// URL is the address the foreign client is given.
func (p *clientProxy) URL() string { return p.srv.URL }

// Close stops the proxy and its sockets.
func (p *clientProxy) Close() {
	p.cancel()
	p.cutAll()
	p.srv.CloseClientConnections()
	p.srv.Close()
	p.wg.Wait()
	p.transport.CloseIdleConnections()
}

func (p *clientProxy) now() int64 { return time.Since(p.start).Nanoseconds() }

func (p *clientProxy) record(r proxyRec) {
	if r.at == 0 {
		r.at = p.now()
	}
	p.mu.Lock()
	p.recs = append(p.recs, r)
	p.mu.Unlock()
}

// drain returns the records since the last drain.
func (p *clientProxy) drain() []proxyRec {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.recs
	p.recs = nil
	return out
}

// chance draws a fault (never while quiet).
func (p *clientProxy) chance(rate float64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.quiet && rate > 0 && p.rng.Float64() < rate
}

func (p *clientProxy) setQuiet() {
	p.mu.Lock()
	p.quiet = true
	p.mu.Unlock()
	p.disarm()
}

// cut closes the client's WebSockets (a fault, or quiesce's poke of a
// client that stopped short of the head: it must resume).
func (p *clientProxy) cut() {
	if p.cutAll() > 0 {
		p.record(proxyRec{kind: recCut})
	}
}

func (p *clientProxy) cutAll() int {
	p.mu.Lock()
	socks := make([]*websocket.Conn, 0, len(p.socks))
	for c := range p.socks {
		socks = append(socks, c)
	}
	p.mu.Unlock()
	for _, c := range socks {
		c.CloseNow()
	}
	return len(socks)
}

func (p *clientProxy) upstream() *url.URL {
	u, _ := url.Parse(p.target.Endpoints()[p.inst]) // looked up per request: restarts may move it
	return u
}

func (p *clientProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/trpc" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		p.websocket(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	reqAt := p.now()
	procs, inputs := trpcCalls(r, body)
	watched := false
	var ids []string // the kb.command ids posted
	for i, proc := range procs {
		switch proc {
		case "kb.command":
			var env kbcore.Envelope
			if json.Unmarshal(inputs[i], &env) == nil && env.ID != "" {
				p.record(proxyRec{kind: recPost, env: env, id: env.ID})
				if p.refusing(env.ID) {
					p.record(proxyRec{kind: recAnswer, id: env.ID, refused: true})
					writeRefusal(w, r.URL.Query().Get("batch") == "1")
					return
				}
				if p.blocked(env.ID) {
					// The answer to its last post was lost and the
					// instance is "restarting": not decided, retryable.
					p.record(proxyRec{kind: recAnswer, id: env.ID, err: "proxy: instance unavailable (fault)"})
					http.Error(w, "proxy: instance unavailable (fault)", http.StatusServiceUnavailable)
					return
				}
				p.holdIfArmed(r.Context(), env.ID)
				ids = append(ids, env.ID)
			}
			watched = true
		case "kb.page":
			var in struct {
				PageID  string   `json:"page_id"`
				Pending []string `json:"pending"`
			}
			_ = json.Unmarshal(inputs[i], &in)
			p.record(proxyRec{kind: recPage, page: in.PageID, pending: in.Pending})
			p.unblock()
			watched = true
		}
	}
	u := *p.upstream()
	u.Path, u.RawQuery = r.URL.Path, r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		p.answers(reqAt, procs, inputs, nil, "upstream: "+err.Error(), false)
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway) // an instance restarting: retryable
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		p.answers(reqAt, procs, inputs, nil, "upstream: "+err.Error(), false)
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	drawn := watched && p.chance(p.faults.LoseResponse)
	forced := p.forcedLoss(ids)
	lose := drawn || forced
	if watched {
		p.answers(reqAt, procs, inputs, answer, "", lose)
	}
	if forced {
		p.lostNow(ids)
	}
	if lose {
		// The server decided; the client never hears it: the connection
		// drops before the answer.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		http.Error(w, "proxy: answer lost (fault)", http.StatusBadGateway)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// writeRefusal answers a kb.command call 400 BAD_REQUEST, tRPC's error
// envelope (spec/PROTOCOL.md 3.1): a 4xx other than 408, 409 and 429 is
// a refusal, final (spec/window.md, Refusals).
func writeRefusal(w http.ResponseWriter, batch bool) {
	body := `{"error":{"message":"proxy: envelope refused (the kit as the server)","code":-32600,"data":{"code":"BAD_REQUEST","httpStatus":400,"path":"kb.command"}}}`
	if batch {
		body = "[" + body + "]"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, body)
}

// trpcCalls splits a tRPC HTTP request into its procedures and inputs
// (spec/PROTOCOL.md 3.1: single calls and httpBatchLink's batches).
func trpcCalls(r *http.Request, body []byte) ([]string, []json.RawMessage) {
	procs := strings.Split(strings.TrimPrefix(r.URL.Path, "/trpc/"), ",")
	raw := body
	if r.Method == http.MethodGet {
		raw = []byte(r.URL.Query().Get("input"))
	}
	inputs := make([]json.RawMessage, len(procs))
	if r.URL.Query().Get("batch") == "1" {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		for i := range procs {
			inputs[i] = m[itoa(i)]
		}
	} else if len(procs) == 1 {
		inputs[0] = raw
	}
	return procs, inputs
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// answers records the answer to each watched call of a request.
func (p *clientProxy) answers(reqAt int64, procs []string, inputs []json.RawMessage, body []byte, failure string, lost bool) {
	parts := []json.RawMessage{body}
	if len(procs) > 1 || (failure == "" && bytes.HasPrefix(bytes.TrimSpace(body), []byte("["))) {
		parts = make([]json.RawMessage, len(procs))
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil && len(arr) == len(procs) {
			parts = arr
		} else {
			for i := range parts {
				parts[i] = body // one error for the whole batch
			}
		}
	}
	for i, proc := range procs {
		var ans struct {
			Result *struct {
				Data json.RawMessage `json:"data"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
				Data    struct {
					Rejection *kbcore.Rejection `json:"rejection"`
				} `json:"data"`
			} `json:"error"`
		}
		rec := proxyRec{lost: lost, err: failure}
		if failure == "" && i < len(parts) {
			if err := json.Unmarshal(parts[i], &ans); err != nil {
				rec.err = "unreadable answer: " + err.Error()
			}
		}
		switch proc {
		case "kb.command":
			var env kbcore.Envelope
			_ = json.Unmarshal(inputs[i], &env)
			rec.kind, rec.id = recAnswer, env.ID
			if rec.id == "" {
				continue
			}
			switch {
			case rec.err != "":
			case ans.Result != nil:
				var d struct {
					Seq       int64 `json:"seq"`
					Duplicate bool  `json:"duplicate"`
				}
				_ = json.Unmarshal(ans.Result.Data, &d)
				rec.seq, rec.dup = d.Seq, d.Duplicate
			case ans.Error != nil && ans.Error.Data.Rejection != nil:
				rec.rej = ans.Error.Data.Rejection
			case ans.Error != nil:
				rec.err = ans.Error.Message
			default:
				rec.err = "an answer without result or error"
			}
		case "kb.page":
			var in struct {
				PageID  string   `json:"page_id"`
				Pending []string `json:"pending"`
			}
			_ = json.Unmarshal(inputs[i], &in)
			rec.kind, rec.page, rec.pending, rec.reqAt = recSnapshot, in.PageID, in.Pending, reqAt
			if rec.err == "" && ans.Result != nil {
				var d struct {
					Seq      int64                     `json:"seq"`
					Outcomes map[string]kbcore.Outcome `json:"outcomes"`
				}
				_ = json.Unmarshal(ans.Result.Data, &d)
				rec.seq, rec.outcomes = d.Seq, d.Outcomes
			} else if rec.err == "" {
				rec.err = "no snapshot"
			}
		default:
			continue
		}
		p.record(rec)
	}
}

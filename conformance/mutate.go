package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// This file is test support: a Target that puts a mutating proxy in front
// of another target, to make deliberately broken servers out of a correct
// one and prove that the checkers notice (broken_test.go).

// mutation is how a mutatingProxy breaks the server behind it. A nil field
// passes that traffic through unchanged.
type mutation struct {
	// command sees the body of every POST /trpc/kb.command (one envelope)
	// and the request's Authorization header (which device posts it)
	// before it is forwarded, and returns the body to forward.
	command func(auth string, body []byte) []byte
	// response sees the body of the server's answer to a kb.command or
	// kb.page call (proc names which) and returns the body to answer; nil
	// withholds the answer (the call hangs until the client gives up).
	response func(proc string, body []byte) []byte
	// upstream sees every client-to-server WebSocket message (the
	// subscriptions, with their lastEventId) and returns the message to
	// forward.
	upstream func(b []byte) []byte
	// stream returns the mutator of one server-to-client WebSocket
	// stream, given the Authorization header the socket was opened with.
	stream func(auth string) streamMutator
	// refuseSockets answers every WebSocket upgrade 503 (counted in
	// fired).
	refuseSockets bool
	// fired counts the mutations made (commands rewritten, events doubled,
	// swapped or dropped): zero means the run did not exercise the bug.
	fired *atomic.Int64
}

// streamMutator rewrites the tracked data events (kb.onPage) of one
// WebSocket, in the order the server sent them.
type streamMutator interface {
	// event returns what the client receives in place of ev (nothing, ev,
	// or several events); it may hold events back.
	event(ev wireEvent) []wireEvent
	// flush returns the events held back: the stream has been idle for a
	// while, another message follows, or the stream ends.
	flush() []wireEvent
}

// wireEvent is a tracked data event:
// {"id":SUB,"result":{"type":"data","id":"SEQ","data":{"seq":SEQ,"cmd":CMD}}}.
type wireEvent struct {
	sub   json.RawMessage // the subscription's id
	seq   int64
	cmd   json.RawMessage // {id, type, payload} as logged
	cmdID string
	// tracked overrides result.id (nil: the seq in decimal; "" leaves
	// result.id out).
	tracked *string
}

func parseEvent(b []byte) (wireEvent, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			Type string          `json:"type"`
			ID   string          `json:"id"`
			Data json.RawMessage `json:"data"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &m) != nil || m.Result == nil || m.Result.Type != "data" || m.Result.ID == "" {
		return wireEvent{}, false
	}
	var d struct {
		Seq int64           `json:"seq"`
		Cmd json.RawMessage `json:"cmd"`
	}
	if json.Unmarshal(m.Result.Data, &d) != nil || d.Seq <= 0 || len(d.Cmd) == 0 {
		return wireEvent{}, false
	}
	var c struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(d.Cmd, &c)
	return wireEvent{sub: m.ID, seq: d.Seq, cmd: d.Cmd, cmdID: c.ID}, true
}

func (e wireEvent) encode() []byte {
	type data struct {
		Seq int64           `json:"seq"`
		Cmd json.RawMessage `json:"cmd"`
	}
	type result struct {
		Type string `json:"type"`
		ID   string `json:"id,omitempty"`
		Data data   `json:"data"`
	}
	id := strconv.FormatInt(e.seq, 10)
	if e.tracked != nil {
		id = *e.tracked
	}
	b, _ := json.Marshal(struct {
		ID     json.RawMessage `json:"id"`
		Result result          `json:"result"`
	}{e.sub, result{"data", id, data{e.seq, e.cmd}}})
	return b
}

// mutatingProxy is a Target whose endpoints are proxies, one per instance
// of the inner target, forwarding HTTP and the /trpc WebSocket through a
// mutation. Devices and restarts are the inner target's.
type mutatingProxy struct {
	inner     Target
	mut       mutation
	ctx       context.Context
	cancel    context.CancelFunc
	transport *http.Transport
	servers   []*httptest.Server
	wg        sync.WaitGroup // WebSocket pumps
}

// flushAfter is how long a stream may hold events back while the server
// sends nothing.
const flushAfter = 100 * time.Millisecond

func newMutatingProxy(inner Target, mut mutation) *mutatingProxy {
	p := &mutatingProxy{inner: inner, mut: mut,
		transport: http.DefaultTransport.(*http.Transport).Clone()}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for i := range inner.Endpoints() {
		p.servers = append(p.servers, httptest.NewServer(p.handler(i)))
	}
	return p
}

// Close stops the proxies and their sockets (not the inner target).
func (p *mutatingProxy) Close() {
	p.cancel()
	for _, s := range p.servers {
		s.Close()
	}
	p.wg.Wait()
	p.transport.CloseIdleConnections()
}

// Endpoints implements Target: the proxies' URLs.
func (p *mutatingProxy) Endpoints() []string {
	out := make([]string, len(p.servers))
	for i, s := range p.servers {
		out[i] = s.URL
	}
	return out
}

// Devices implements Target.
func (p *mutatingProxy) Devices(ctx context.Context, n int) ([]string, error) {
	return p.inner.Devices(ctx, n)
}

// RestartInstance restarts the inner instance i (its proxy stays up; the
// proxied sockets end with the instance's).
func (p *mutatingProxy) RestartInstance(ctx context.Context, i int) error {
	if r, ok := p.inner.(Restarter); ok {
		return r.RestartInstance(ctx, i)
	}
	return nil
}

// CanRestartPostgres implements PostgresRestarter.
func (p *mutatingProxy) CanRestartPostgres() bool {
	r, ok := p.inner.(PostgresRestarter)
	return ok && r.CanRestartPostgres()
}

// RestartPostgres implements PostgresRestarter.
func (p *mutatingProxy) RestartPostgres(ctx context.Context) error {
	return p.inner.(PostgresRestarter).RestartPostgres(ctx)
}

func (p *mutatingProxy) upstream(i int) *url.URL {
	u, _ := url.Parse(p.inner.Endpoints()[i]) // looked up per request: restarts may move it
	return u
}

func (p *mutatingProxy) handler(i int) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(p.upstream(i)) },
		Transport: p.transport,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// An instance being restarted: a retryable 502.
			http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		},
		ModifyResponse: p.modifyResponse,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/trpc" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			if p.mut.refuseSockets {
				p.mut.fired.Add(1)
				http.Error(w, "proxy: no WebSockets", http.StatusServiceUnavailable)
				return
			}
			p.websocket(w, r, i)
			return
		}
		if p.mut.command != nil && r.Method == http.MethodPost && r.URL.Path == "/trpc/kb.command" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
				return
			}
			body = p.mut.command(r.Header.Get("Authorization"), body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		rp.ServeHTTP(w, r)
	})
}

// modifyResponse passes the answer to a kb.command or kb.page call
// through the mutation's response hook.
func (p *mutatingProxy) modifyResponse(resp *http.Response) error {
	if p.mut.response == nil || resp.Request == nil || resp.Header.Get("Content-Encoding") != "" {
		return nil
	}
	proc := strings.TrimPrefix(resp.Request.URL.Path, "/trpc/")
	if proc != "kb.command" && proc != "kb.page" {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	body = p.mut.response(proc, body)
	if body == nil {
		select { // a server that never answers
		case <-resp.Request.Context().Done():
			return resp.Request.Context().Err()
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// websocket proxies one /trpc WebSocket: it dials the instance with the
// client's credentials, then pumps messages both ways, server-to-client
// data events through the mutation.
func (p *mutatingProxy) websocket(w http.ResponseWriter, r *http.Request, i int) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	u := *p.upstream(i)
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
		return
	}
	down, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		up.CloseNow()
		return
	}
	p.wg.Add(1)
	defer p.wg.Done()
	defer down.CloseNow()
	defer up.CloseNow()
	up.SetReadLimit(64 << 20)
	down.SetReadLimit(64 << 20)

	// Client to server: through the mutation's upstream hook.
	go relayUp(ctx, cancel, down, up, p.mut.upstream)
	// Server to client: through the mutation.
	msgs := serverMessages(ctx, up)
	var mut streamMutator
	if p.mut.stream != nil {
		mut = p.mut.stream(r.Header.Get("Authorization"))
	}
	write := func(evs []wireEvent) bool {
		for _, ev := range evs {
			if down.Write(ctx, websocket.MessageText, ev.encode()) != nil {
				return false
			}
		}
		return true
	}
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for {
		select {
		case b, ok := <-msgs:
			if !ok {
				if mut != nil {
					write(mut.flush())
				}
				return
			}
			ev, isEvent := parseEvent(b)
			switch {
			case mut == nil:
				if down.Write(ctx, websocket.MessageText, b) != nil {
					return
				}
			case isEvent:
				if !write(mut.event(ev)) {
					return
				}
			default:
				if !write(mut.flush()) || down.Write(ctx, websocket.MessageText, b) != nil {
					return
				}
			}
			idle.Reset(flushAfter)
		case <-idle.C:
			if mut != nil && !write(mut.flush()) {
				return
			}
			idle.Reset(time.Hour)
		case <-ctx.Done():
			return
		}
	}
}

// ---- the broken variants ----

// Each variant breaks one guarantee of spec/PROTOCOL.md; a fresh value
// has fresh state (ids seen, counter).
func mutDoubleEcho() mutation {
	n := new(atomic.Int64)
	return mutation{fired: n, stream: func(string) streamMutator { return &doubleEcho{fired: n} }}
}

func mutReorder() mutation {
	n := new(atomic.Int64)
	return mutation{fired: n, stream: func(string) streamMutator { return &reorderEchoes{fired: n} }}
}

// mutSkipDedup forwards a command id posted before under a fresh id: a
// server without deduplication, where a retry applies twice.
func mutSkipDedup() mutation {
	n := new(atomic.Int64)
	seen := newIDSet()
	return mutation{fired: n, command: func(_ string, body []byte) []byte {
		id, env := envelopeID(body)
		if id == "" || !seen.add(id) {
			return body
		}
		n.Add(1)
		env["id"], _ = json.Marshal(uuid.NewString())
		b, _ := json.Marshal(env)
		return b
	}}
}

// mutDropDerived: a server that does not publish derived commands.
func mutDropDerived() mutation {
	n := new(atomic.Int64)
	posted := newIDSet()
	return mutation{
		fired: n,
		command: func(_ string, body []byte) []byte {
			if id, _ := envelopeID(body); id != "" {
				posted.add(id)
			}
			return body
		},
		stream: func(string) streamMutator { return dropUnposted{posted: posted, fired: n} },
	}
}

// doubleEcho sends every event whose server seq is 3 mod 8 twice, the copy
// with the next seq, and renumbers the rest of the stream after it: the
// server "logged a command twice".
type doubleEcho struct {
	shift int64
	fired *atomic.Int64
}

func (d *doubleEcho) event(ev wireEvent) []wireEvent {
	real := ev.seq
	ev.seq += d.shift
	out := []wireEvent{ev}
	if real%8 == 3 {
		d.fired.Add(1)
		d.shift++
		ev.seq++
		out = append(out, ev)
	}
	return out
}

func (d *doubleEcho) flush() []wireEvent { return nil }

// reorderEchoes swaps the commands of the events with seqs 4 and 5 mod 10
// (each keeps its seq): the server delivers a page's commands out of
// order. An event 4 mod 10 whose successor does not follow at once is
// sent unchanged.
type reorderEchoes struct {
	held  *wireEvent
	fired *atomic.Int64
}

func (r *reorderEchoes) event(ev wireEvent) []wireEvent {
	if h := r.held; h != nil {
		r.held = nil
		if ev.seq == h.seq+1 {
			r.fired.Add(1)
			h.cmd, h.cmdID, ev.cmd, ev.cmdID = ev.cmd, ev.cmdID, h.cmd, h.cmdID
			return []wireEvent{*h, ev}
		}
		return append([]wireEvent{*h}, r.event(ev)...)
	}
	if ev.seq%10 == 4 {
		r.held = &ev
		return nil
	}
	return []wireEvent{ev}
}

func (r *reorderEchoes) flush() []wireEvent {
	if h := r.held; h != nil {
		r.held = nil
		return []wireEvent{*h}
	}
	return nil
}

// dropUnposted drops the events of commands no client posted through the
// proxy: the derived commands of renames, merges and implicit pages.
type dropUnposted struct {
	posted *idSet
	fired  *atomic.Int64
}

func (d dropUnposted) event(ev wireEvent) []wireEvent {
	if !d.posted.has(ev.cmdID) {
		d.fired.Add(1)
		return nil
	}
	return []wireEvent{ev}
}

func (d dropUnposted) flush() []wireEvent { return nil }

type idSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func newIDSet() *idSet { return &idSet{ids: map[string]bool{}} }

// add adds id and reports whether it was there already.
func (s *idSet) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	had := s.ids[id]
	s.ids[id] = true
	return had
}

func (s *idSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

// envelopeID returns the id of a kb.command body and the body decoded.
func envelopeID(body []byte) (string, map[string]json.RawMessage) {
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil {
		return "", nil
	}
	var id string
	_ = json.Unmarshal(env["id"], &id)
	return id, env
}

// relayUp relays a proxied socket's client messages to the server, each
// text message through hook (nil: as it is), until either side fails;
// then it cancels the socket's context.
func relayUp(ctx context.Context, cancel func(), down, up *websocket.Conn, hook func([]byte) []byte) {
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

// serverMessages reads a proxied socket's server messages into a channel,
// closed when a read fails or ctx ends.
func serverMessages(ctx context.Context, up *websocket.Conn) <-chan []byte {
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
